import type { Config } from '../config.js';
import type { Database, Db } from '../db/client.js';
import { findWorkspaceById } from './service.js';
import type { Workspace } from './tables.js';

// SVC_TENANTS_HELD / SVC_TENANTS_REFRESH: each process keeps the fields of the workspaces it
// recently served (name, deactivation), at most `held` of them, least recently used
// dropped first, each reread once it is `refreshMs` old. There is no cross-process
// invalidation: a change made through one process (or a command) is seen by every other
// within the refresh time. The credential reads (src/auth/credentials.ts) never use this
// cache, so a deactivated workspace's sessions and tokens stop answering at once.

export interface WorkspaceCacheOptions {
  /** Most entries kept (SVC_TENANTS_HELD). */
  held: number;
  /** Age after which an entry is reread (SVC_TENANTS_REFRESH). */
  refreshMs: number;
  /** The clock, in milliseconds; tests inject their own. */
  now?: () => number;
}

interface Entry<T> {
  value: Promise<T>;
  loadedAt: number;
}

/** A bounded LRU whose entries expire `refreshMs` after they were loaded. */
export class RefreshingCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly held: number;
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(options: WorkspaceCacheOptions) {
    this.held = Math.max(1, options.held);
    this.refreshMs = options.refreshMs;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /**
   * The value for `key`: the held one while it is younger than `refreshMs`, else what
   * `load` answers (concurrent callers share one load; a failed load is not kept).
   */
  get(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.now();
    const held = this.entries.get(key);
    if (held && now - held.loadedAt < this.refreshMs) {
      this.entries.delete(key);
      this.entries.set(key, held);
      return held.value;
    }
    const entry: Entry<T> = { value: load(), loadedAt: now };
    this.entries.delete(key);
    this.entries.set(key, entry);
    entry.value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    while (this.entries.size > this.held) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return entry.value;
  }

  /** Drops one entry, so the next read goes to the database (this process only). */
  forget(key: string): void {
    this.entries.delete(key);
  }
}

export type WorkspaceCache = RefreshingCache<Workspace | undefined>;

export function createWorkspaceCache(options: WorkspaceCacheOptions): WorkspaceCache {
  return new RefreshingCache<Workspace | undefined>(options);
}

const perDatabase = new WeakMap<Database, WorkspaceCache>();

/** This process's cache for one database pool, sized by its configuration. */
export function workspaceCacheOf(database: Database, config: Config): WorkspaceCache {
  let cache = perDatabase.get(database);
  if (!cache) {
    cache = createWorkspaceCache(config.workspaces);
    perDatabase.set(database, cache);
  }
  return cache;
}

/**
 * A workspace's fields (name, deactivation) as this process holds them: at most
 * SVC_TENANTS_REFRESH old. Undefined for an unknown id (also held for the refresh time).
 * Not for authentication: credential reads stay uncached.
 */
export function getWorkspaceCached(
  ctx: { database: Database; config: Config },
  id: string,
): Promise<Workspace | undefined> {
  const db: Db = ctx.database.db;
  return workspaceCacheOf(ctx.database, ctx.config).get(id, () => findWorkspaceById(db, id));
}
