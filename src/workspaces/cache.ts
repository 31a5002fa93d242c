import { sql } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import type { Database, Db } from '../db/client.js';
import { payloadObject } from '../events/payload.js';
import type { Logger } from '../log.js';
import { findWorkspaceById } from './service.js';
import type { Workspace } from './tables.js';

// SVC_TENANTS_HELD / SVC_TENANTS_REFRESH: each process holds, for the workspaces it served
// most recently, what it reads about them on most requests: the workspace's own fields
// (name, deactivation) and whatever per-workspace definitions plugins declare with
// `perWorkspace` (a fields plugin's field definitions). At most `held` workspaces are kept,
// the least recently used dropped first with everything held for it; each value is reread
// once it is `refreshMs` old. A change made through one process (or a command) is seen at
// once by the process that made it when it calls `forget`, by every other within the
// refresh time, or at once when the writer announces it with `changed` (a NOTIFY on
// CACHE_CHANNEL that every serving process LISTENs to). The credential reads
// (src/auth/credentials.ts, with their own cache, dropped by a deactivation's revocation
// notice) and channel-delivery checks never use this cache, so a deactivation stops them
// at once.
//
// The bookkeeping is lru-cache's: an outer cache of workspaces (`max: held`), each holding
// an inner cache of its named values (`ttl` from `refreshMs`, loaded by `fetchMethod`,
// which shares one load among concurrent readers and keeps no failed one).

export interface WorkspaceCacheOptions {
  /** Most workspaces kept (SVC_TENANTS_HELD). */
  held: number;
  /** Age after which a held value is reread (SVC_TENANTS_REFRESH). */
  refreshMs: number;
  /** The clock, in whole milliseconds; tests inject their own. */
  now?: () => number;
}

/** A held value, boxed: lru-cache holds no `undefined`, and an unknown workspace is one. */
interface Held {
  value: unknown;
}

type Load = () => Promise<unknown>;
type Values = LRUCache<string, Held, Load>;

/**
 * Bound on the named values one workspace holds. Names are declarations (the workspace's
 * fields and one or two per plugin), not data; lru-cache only requires some bound.
 */
const VALUES_PER_WORKSPACE = 32;

/**
 * lru-cache calls an entry stale once its age is *more* than `ttl`, and reads a start of 0
 * as "no TTL"; this cache rereads a value once it is `refreshMs` old, on a clock of whole
 * milliseconds that tests start at 0. So lru-cache counts half milliseconds from one tick
 * on: more than 2·refreshMs − 1 half milliseconds is exactly at least refreshMs.
 */
function valuesOptions(
  refreshMs: number,
  now: () => number,
): LRUCache.OptionsMaxLimit<string, Held, Load> {
  return {
    max: VALUES_PER_WORKSPACE,
    ttl: 2 * Math.ceil(refreshMs) - 1,
    perf: { now: () => 2 * (now() + 1) },
    // Read the clock on every check (its default caches it for 1ms).
    ttlResolution: 0,
    // A value forgotten (or dropped) while it loads still answers the readers waiting on it.
    ignoreFetchAbort: true,
    fetchMethod: async (_name, _stale, { context: load }) => ({ value: await load() }),
  };
}

/** The held values of the `held` most recently used workspaces, each under a name. */
export class WorkspaceCache {
  /** Workspace id → its values by name; the least recently used is dropped first. */
  private readonly workspaces: LRUCache<string, Values>;
  private readonly valuesOptions: LRUCache.OptionsMaxLimit<string, Held, Load>;

  constructor(options: WorkspaceCacheOptions) {
    this.workspaces = new LRUCache({ max: Math.max(1, options.held) });
    this.valuesOptions = valuesOptions(options.refreshMs, options.now ?? Date.now);
  }

  /** How many workspaces are held. */
  get size(): number {
    return this.workspaces.size;
  }

  /** Whether the workspace is held, or one of its values is held and not yet stale. */
  has(workspaceId: string, name?: string): boolean {
    const values = this.workspaces.peek(workspaceId);
    return name === undefined ? values !== undefined : (values?.has(name) ?? false);
  }

  /**
   * The value named `name` for a workspace: the held one while it is younger than
   * `refreshMs`, else what `load` answers (concurrent callers share one load; a failed
   * load is not kept). Marks the workspace most recently used.
   */
  async get<T>(workspaceId: string, name: string, load: () => Promise<T>): Promise<T> {
    let values = this.workspaces.get(workspaceId);
    if (!values) {
      values = new LRUCache(this.valuesOptions);
      this.workspaces.set(workspaceId, values);
    }
    const held = await values.fetch(name, { context: load });
    return held!.value as T;
  }

  /** Drops one held value, or everything held for the workspace (this process only). */
  forget(workspaceId: string, name?: string): void {
    if (name === undefined) this.workspaces.delete(workspaceId);
    else this.workspaces.peek(workspaceId)?.delete(name);
  }

  /** Drops everything held (announcements may have been missed). */
  clear(): void {
    this.workspaces.clear();
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
  /**
   * Announces, in the writing transaction `tx`, that the value changed: at commit every
   * serving process (this one too) drops it and rereads on its next `get`; a rollback
   * announces nothing. Call `forget` after the commit as well, so this process's next
   * read cannot race its own announcement.
   */
  changed(tx: Db, workspaceId: string): Promise<void>;
}

/** The channel cache announcements travel on: `{ workspaceId, name }` as JSON. */
export const CACHE_CHANNEL = 'svc_workspace_cache';

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
    changed: async (tx, workspaceId) => {
      await tx.execute(
        sql`select pg_notify(${CACHE_CHANNEL}, ${JSON.stringify({ workspaceId, name })})`,
      );
    },
  };
}

/**
 * Makes this process's cache drop what other processes announce with `changed`. After a
 * lost connection everything is dropped, since announcements made meanwhile are lost.
 */
export async function listenForCacheChanges(
  database: Database,
  config: Config,
  log: Logger,
): Promise<{ unlisten(): Promise<void> }> {
  const cache = workspaceCacheOf(database, config);
  let listens = 0;
  return database.sql.listen(
    CACHE_CHANNEL,
    (payload) => {
      const notice = cacheNotice(payload);
      if (notice) cache.forget(notice.workspaceId, notice.name);
      else log.warn({ channel: CACHE_CHANNEL }, 'cache notice unreadable, skipped');
    },
    () => {
      listens += 1;
      if (listens > 1) cache.clear();
    },
  );
}

function cacheNotice(payload: string): { workspaceId: string; name: string } | null {
  const notice = payloadObject(payload);
  const { workspaceId, name } = notice ?? {};
  return typeof workspaceId === 'string' && typeof name === 'string' ? { workspaceId, name } : null;
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
