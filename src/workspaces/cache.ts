import type { Config } from '../config.js';
import type { Database, Db } from '../db/client.js';
import { findWorkspaceById } from './service.js';
import type { Workspace } from './tables.js';

// SVC_TENANTS_HELD / SVC_TENANTS_REFRESH: each process holds, for the workspaces it served
// most recently, what it reads about them on most requests: the workspace's own fields
// (name, deactivation) and whatever per-workspace definitions plugins declare with
// `perWorkspace` (a fields plugin's field definitions). At most `held` workspaces are kept,
// the least recently used dropped first with everything held for it; each value is reread
// once it is `refreshMs` old. There is no cross-process invalidation: a change made through
// one process (or a command) is seen by every other within the refresh time, and at once
// by the process that made it when it calls `forget`. The credential reads
// (src/auth/credentials.ts) and channel-delivery checks never use this cache, so a
// deactivation stops them at once.

export interface WorkspaceCacheOptions {
  /** Most workspaces kept (SVC_TENANTS_HELD). */
  held: number;
  /** Age after which a held value is reread (SVC_TENANTS_REFRESH). */
  refreshMs: number;
  /** The clock, in milliseconds; tests inject their own. */
  now?: () => number;
}

interface HeldValue {
  value: Promise<unknown>;
  loadedAt: number;
}

/** The held values of the `held` most recently used workspaces, each under a name. */
export class WorkspaceCache {
  /** Workspace id → value name → value; Map order is least recently used first. */
  private readonly workspaces = new Map<string, Map<string, HeldValue>>();
  private readonly held: number;
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(options: WorkspaceCacheOptions) {
    this.held = Math.max(1, options.held);
    this.refreshMs = options.refreshMs;
    this.now = options.now ?? Date.now;
  }

  /** How many workspaces are held. */
  get size(): number {
    return this.workspaces.size;
  }

  has(workspaceId: string, name?: string): boolean {
    const values = this.workspaces.get(workspaceId);
    return name === undefined ? values !== undefined : (values?.has(name) ?? false);
  }

  /**
   * The value named `name` for a workspace: the held one while it is younger than
   * `refreshMs`, else what `load` answers (concurrent callers share one load; a failed
   * load is not kept). Marks the workspace most recently used.
   */
  get<T>(workspaceId: string, name: string, load: () => Promise<T>): Promise<T> {
    const now = this.now();
    let values = this.workspaces.get(workspaceId);
    if (values) this.workspaces.delete(workspaceId);
    else values = new Map();
    this.workspaces.set(workspaceId, values);

    const held = values.get(name);
    if (held && now - held.loadedAt < this.refreshMs) return held.value as Promise<T>;
    const entry: HeldValue = { value: load(), loadedAt: now };
    values.set(name, entry);
    entry.value.catch(() => {
      if (values.get(name) === entry) values.delete(name);
    });
    while (this.workspaces.size > this.held) {
      const oldest = this.workspaces.keys().next().value as string;
      this.workspaces.delete(oldest);
    }
    return entry.value as Promise<T>;
  }

  /** Drops one held value, or everything held for the workspace (this process only). */
  forget(workspaceId: string, name?: string): void {
    if (name === undefined) this.workspaces.delete(workspaceId);
    else this.workspaces.get(workspaceId)?.delete(name);
  }
}

export function createWorkspaceCache(options: WorkspaceCacheOptions): WorkspaceCache {
  return new WorkspaceCache(options);
}

/** What reading through the cache needs; a request `Context` or a plugin `RouteContext` fits. */
export interface CacheScope {
  database: Database;
  config: Config;
}

// Keyed by the pool itself: each request sees the database through its own gated view
// (src/db/gate.ts), and every view of one pool shares one cache.
const perPool = new WeakMap<Database['sql'], WorkspaceCache>();

/** This process's cache for one database pool, sized by its configuration. */
export function workspaceCacheOf(database: Database, config: Config): WorkspaceCache {
  let cache = perPool.get(database.sql);
  if (!cache) {
    cache = createWorkspaceCache(config.workspaces);
    perPool.set(database.sql, cache);
  }
  return cache;
}

/** A per-workspace value held in the process's workspace cache. */
export interface PerWorkspace<T> {
  /** The workspace's value, at most SVC_TENANTS_REFRESH old. */
  get(scope: CacheScope, workspaceId: string): Promise<T>;
  /** Makes this process reread the value on its next `get` (call it after a write). */
  forget(scope: CacheScope, workspaceId: string): void;
}

/**
 * Declares a value kept per workspace in the process's cache (SVC_TENANTS_HELD,
 * SVC_TENANTS_REFRESH), loaded by `load` when missing or stale. `name` must be unique in
 * the deployment; a plugin starts it with its id (`fields.definitions`).
 */
export function perWorkspace<T>(
  name: string,
  load: (db: Db, workspaceId: string) => Promise<T>,
): PerWorkspace<T> {
  return {
    get: (scope, workspaceId) =>
      workspaceCacheOf(scope.database, scope.config).get(workspaceId, name, () =>
        load(scope.database.db, workspaceId),
      ),
    forget: (scope, workspaceId) =>
      workspaceCacheOf(scope.database, scope.config).forget(workspaceId, name),
  };
}

const workspaceFields = perWorkspace<Workspace | undefined>('workspace', findWorkspaceById);

/**
 * A workspace's fields (name, deactivation) as this process holds them: at most
 * SVC_TENANTS_REFRESH old. Undefined for an unknown id (also held for the refresh time).
 * Not for authentication nor channel deliveries: those read the table at once.
 */
export function getWorkspaceCached(scope: CacheScope, id: string): Promise<Workspace | undefined> {
  return workspaceFields.get(scope, id);
}
