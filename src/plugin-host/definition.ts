import type { JobKind } from '../jobs/runner.js';
import type { Config } from '../config.js';
import type { Actor } from '../context.js';
import type { Database, Db } from '../db/client.js';
import type { ErrorCode, Meta } from '../errors.js';
import type { Logger } from '../log.js';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a route handler receives besides the request. */
export interface RouteContext {
  config: Config;
  database: Database;
  log: Logger;
  /** Values of `:name` segments of the route's path. */
  params: Record<string, string>;
  /** The signed-in caller; null on a public route. */
  actor: Actor | null;
  /** The caller's workspace; null on a public route (the plugin routes its payload itself). */
  workspaceId: string | null;
  /** Aborted when the server shuts down. */
  signal: AbortSignal;
}

export interface PluginRoute {
  method: HttpMethod;
  /** Path below `/api/plugins/<id>/`, with `:name` segments, e.g. `items/:id`. */
  path: string;
  /**
   * Reachable without a session or token; the plugin authenticates the caller itself
   * (a signature, a token compare). Public routes skip the plugin-route bounds.
   * @default false
   */
  public?: boolean;
  handler(request: Request, ctx: RouteContext): Response | Promise<Response>;
}

/** What `start` receives: the process's shared services. */
export interface PluginRuntime {
  config: Config;
  database: Database;
  log: Logger;
}

/**
 * A plugin's share of housekeeping (docs/plugins.md, "Sweeps"): every table a plugin fills
 * from outside has a bound or an expiry, and an expiry is a sweep. Every process runs each
 * sweep at start and hourly, so it must be idempotent; one failing leaves the others run.
 */
export interface PluginSweep {
  /** Names the sweep in the log line: `early statuses`. */
  name: string;
  /** Deletes what has expired; answers how many rows went. */
  run(db: Db): Promise<number>;
}

/**
 * What a plugin's `contactData` hooks receive: the erasing or merging transaction, its
 * workspace and the process's configuration. Every statement runs on `db`, so the plugin's
 * rows go with the contact or not at all.
 */
export interface ContactDataScope {
  /** The transaction that erases or merges the contacts; they are locked (FOR UPDATE). */
  db: Db;
  workspaceId: string;
  config: Config;
}

/**
 * How a plugin's own rows follow a contact (docs/contacts.md): required of every plugin
 * whose tables name contacts (a foreign key to `contacts` in its migrations, or a column
 * holding a contact's id). The core calls them in the erasing or merging transaction,
 * after locking the contacts and before deleting them.
 */
export interface ContactDataHooks {
  /**
   * Removes (or unlinks) every row of the plugin naming these contacts, and whatever else
   * the plugin stores that names them (its events' data through `redactEvents`). Nothing
   * naming them may stay readable through the plugin's fields or routes afterwards.
   */
  erase(scope: ContactDataScope, contactIds: readonly string[]): Promise<void>;
  /**
   * Moves the sources' rows to the target (the target's own wins where both hold one);
   * the sources are erased right after, through `erase`. May refuse (throw a reason), which
   * rolls the merge back.
   */
  merge(
    scope: ContactDataScope,
    move: { targetId: string; sourceIds: readonly string[] },
  ): Promise<void>;
}

export interface ReasonDeclaration {
  code: ErrorCode;
  message: string | ((meta: Meta) => string);
}

/**
 * A plugin's backend module default-exports one of these (via `definePlugin`). Every
 * member but `id` is optional.
 */
export interface PluginDefinition {
  /** Equals the manifest's id and the folder name. */
  id: string;
  /** Scope areas the plugin's graph fields and routes are guarded by (`notes`). */
  areas?: string[];
  /** Capabilities the plugin's roles may hold. */
  capabilities?: string[];
  /**
   * Roles and the capabilities they hold: a new name declares a role; a role that already
   * exists (`admin`) gains them on top of its own.
   */
  roles?: Record<string, string[]>;
  /** Webhook event names the plugin publishes (`chat.message.received`). */
  events?: string[];
  /**
   * The `data` key carrying the subject of the plugin's events, where a contract fixes one
   * (`conversation_id`); by default the name's first segment plus `Id` (`noteId`).
   */
  eventSubjectKey?: string;
  /** Error reasons the plugin refuses with (SPEC 7.4). */
  reasons?: Record<string, ReasonDeclaration>;
  /** HTTP routes served under `/api/plugins/<id>/`. */
  routes?: PluginRoute[];
  /**
   * The scope area every non-public route is held to: a token needs `<area>:read` for
   * GET and HEAD and `<area>:write` otherwise, checked before the plugin sees the request.
   */
  routeArea?: string;
  /** Deletes of expired rows housekeeping runs hourly in every process. */
  sweeps?: PluginSweep[];
  /**
   * Background job kinds the plugin runs (`defineJob`, docs/plugins.md "Background jobs"):
   * the host starts a runner for each after `start` and stops it before `stop`.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own fields
  jobs?: readonly JobKind<any>[];
  /**
   * How the plugin's rows follow an erased or merged contact (docs/contacts.md). Required
   * when the plugin's migrations reference `contacts`: loading such a plugin without it
   * fails.
   */
  contactData?: ContactDataHooks;
  /** Called once the server's migrations ran, before it takes requests. */
  start?(runtime: PluginRuntime): void | Promise<void>;
  /** Called at shutdown, bounded by SVC_SHUTDOWN_STOP_GRACE. */
  stop?(): void | Promise<void>;
}
