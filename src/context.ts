import type { AccessCatalogue } from './auth/access.js';
import type { Config } from './config.js';
import type { Database } from './db/client.js';
import type { EventBus } from './events/bus.js';
import { refuse } from './errors.js';
import { RequestLoaders } from './loaders.js';
import type { Logger } from './log.js';

/** Who is calling. Filled by the authentication layer; null for an anonymous caller. */
export interface Actor {
  userId: string;
  workspaceId: string;
  role: string | null;
  capabilities: ReadonlySet<string>;
  /** Set when the caller presented an API token; null for a session. */
  token: { id: string; name: string; scopes: ReadonlySet<string> | null } | null;
  /** The browser session the caller signed in with; null for a token. */
  sessionId: string | null;
  /**
   * When the credential stops working by itself (a session's end, a token's lifetime);
   * null or absent: never. A stream opened with it ends then.
   */
  expiresAt?: Date | null;
}

/**
 * What every resolver and service receives. Built once per request by `createContext`,
 * where the credential is resolved (the graph route, MCP, a command).
 */
export interface Context {
  config: Config;
  database: Database;
  log: Logger;
  requestId: string;
  actor: Actor | null;
  /** The caller's workspace, which every query is scoped to; null for an anonymous caller. */
  workspaceId: string | null;
  /** The request's batching loaders (src/loaders.ts), made on first use. */
  loaders: RequestLoaders;
  /** Areas, capabilities and roles of this deployment. */
  access: AccessCatalogue;
  /** The client's address after SVC_TRUSTED_PROXIES (login limit, anonymous budget). */
  clientAddress: string;
  /** The request's headers (Accept-Language, for the locale). */
  headers: Headers;
  /** Set-Cookie values the answer carries (sign-in and sign-out). */
  responseCookies: string[];
  /** Aborted when the client goes away, the operation passes its deadline or shutdown cancels it. */
  signal: AbortSignal;
  /** The process's event bus (coreEvent streams subscribe to it). */
  events: EventBus;
  /** Aborts `signal` (the operation deadline uses it). */
  cancel(reason?: unknown): void;
  /**
   * Set on an operation sent onto a single-connection event stream (graphql-sse's
   * single-connection mode, docs/events.md): its results travel on that stream, and a
   * subscription takes one of the caller's stream slots, held until it ends.
   */
  singleConnection?: {
    /** A stream slot of the caller, or null when all are taken; the function frees it. */
    takeStreamSlot(): (() => void) | null;
    /** The refusal a subscription over the stream cap answers. */
    refusal(): Error;
  };
}

/** A context whose caller is signed in. */
export type SignedInContext = Context & { actor: Actor; workspaceId: string };

/**
 * The context of a signed-in caller. Services run behind the graph's `authenticated` scope
 * (or a command's account), so this refuses only a caller that reached one without it.
 */
export function signedIn(ctx: Context): SignedInContext {
  if (!ctx.actor || ctx.workspaceId === null) throw refuse('authentication_required');
  return ctx as SignedInContext;
}

/**
 * What a context is made of; `requestId`, `log`, `signal` and `headers` may be the
 * functions that make them, on first use (most requests never log, so never need an id,
 * and `{ version }` reads neither of the others).
 */
export type ContextFields = Omit<
  Context,
  'workspaceId' | 'loaders' | 'requestId' | 'log' | 'signal' | 'headers'
> & {
  requestId: string | (() => string);
  log: Logger | (() => Logger);
  signal: AbortSignal | (() => AbortSignal);
  headers: Headers | (() => Headers);
};

/**
 * A request's context: the caller's workspace and fresh loaders follow from its actor.
 * Built field by field, with its lazy fields as getters of the literal, so every context
 * has one shape (a spread of the fields, or a getter defined afterwards, gave each its own).
 */
export function createContext(fields: ContextFields): Context {
  const workspaceId = fields.actor?.workspaceId ?? null;
  const { log: logOrMake, signal: signalOrMake, headers: headersOrMake, database } = fields;
  const { requestId: idOrMake } = fields;
  let requestId = typeof idOrMake === 'function' ? undefined : idOrMake;
  let log = typeof logOrMake === 'function' ? undefined : logOrMake;
  let signal = typeof signalOrMake === 'function' ? undefined : signalOrMake;
  let headers = typeof headersOrMake === 'function' ? undefined : headersOrMake;
  const context: Context = {
    config: fields.config,
    database,
    actor: fields.actor,
    workspaceId,
    // The request's database view is made on first use (src/db/gate.ts), by loaders too.
    loaders: new RequestLoaders(() => database.db, workspaceId),
    access: fields.access,
    clientAddress: fields.clientAddress,
    responseCookies: fields.responseCookies,
    events: fields.events,
    cancel: fields.cancel,
    get requestId() {
      return (requestId ??= (idOrMake as () => string)());
    },
    get log() {
      return (log ??= (logOrMake as () => Logger)());
    },
    get signal() {
      return (signal ??= (signalOrMake as () => AbortSignal)());
    },
    get headers() {
      return (headers ??= (headersOrMake as () => Headers)());
    },
  };
  if (fields.singleConnection) context.singleConnection = fields.singleConnection;
  return context;
}
