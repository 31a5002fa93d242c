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
 * A class, its lazy fields read through getters on its prototype: every context shares
 * one shape, and making one allocates no closure. Getters in an object literal gave each
 * context a map of its own in the old generation, pointing at the request's young objects:
 * every scavenge kept the request alive (a fifth of all it allocated) until a full
 * collection (docs/performance.md).
 */
class RequestContext implements Context {
  readonly config: Config;
  readonly database: Database;
  readonly actor: Actor | null;
  readonly workspaceId: string | null;
  readonly loaders: RequestLoaders;
  readonly access: AccessCatalogue;
  readonly clientAddress: string;
  readonly responseCookies: string[];
  readonly events: EventBus;
  readonly cancel: (reason?: unknown) => void;
  singleConnection: Context['singleConnection'];
  // Plain fields, not `#private` ones: Yoga's server adapter hands resolvers an object made
  // with `Object.create(context)`, whose reads of these must reach this instance's.
  private madeRequestId: string | (() => string);
  private madeLog: Logger | (() => Logger);
  private madeSignal: AbortSignal | (() => AbortSignal);
  private madeHeaders: Headers | (() => Headers);

  constructor(fields: ContextFields) {
    this.config = fields.config;
    this.database = fields.database;
    this.actor = fields.actor;
    this.workspaceId = fields.actor?.workspaceId ?? null;
    // The request's database view is made on first use (src/db/gate.ts), by loaders too.
    const { database } = fields;
    this.loaders = new RequestLoaders(() => database.db, this.workspaceId);
    this.access = fields.access;
    this.clientAddress = fields.clientAddress;
    this.responseCookies = fields.responseCookies;
    this.events = fields.events;
    this.cancel = fields.cancel;
    this.singleConnection = fields.singleConnection;
    this.madeRequestId = fields.requestId;
    this.madeLog = fields.log;
    this.madeSignal = fields.signal;
    this.madeHeaders = fields.headers;
  }

  get requestId(): string {
    const id = this.madeRequestId;
    return typeof id === 'function' ? (this.madeRequestId = id()) : id;
  }

  get log(): Logger {
    const log = this.madeLog;
    return typeof log === 'function' ? (this.madeLog = log()) : log;
  }

  get signal(): AbortSignal {
    const signal = this.madeSignal;
    return typeof signal === 'function' ? (this.madeSignal = signal()) : signal;
  }

  get headers(): Headers {
    const headers = this.madeHeaders;
    return typeof headers === 'function' ? (this.madeHeaders = headers()) : headers;
  }
}

export function createContext(fields: ContextFields): Context {
  return new RequestContext(fields);
}
