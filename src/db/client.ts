import postgres, { type Sql, type TransactionSql } from 'postgres';
import { PgDialect } from 'drizzle-orm/pg-core';
import { drizzle, PostgresJsDatabase, PostgresJsSession } from 'drizzle-orm/postgres-js';

export type Db = PostgresJsDatabase;

const dialect = new PgDialect({ casing: 'snake_case' });

/**
 * Drizzle over a postgres.js client: a pool, a transaction (so a raw `COPY` and Drizzle
 * writes share it), or a client of the same shape (the query gate's).
 */
export function drizzleOver(client: Sql | TransactionSql): Db {
  const session = new PostgresJsSession(client as Sql, dialect, undefined, {});
  return new PostgresJsDatabase(dialect, session, undefined) as Db;
}

export interface Database {
  /** The postgres.js pool, for raw SQL and reserved connections. */
  sql: Sql;
  /** Drizzle over the same pool. */
  db: Db;
  close(timeoutSeconds?: number): Promise<void>;
}

export interface DatabaseOptions {
  /** Pool size. @default 10 */
  max?: number;
  applicationName?: string;
  /**
   * PostgreSQL's `statement_timeout` on every connection of the pool: the backstop that
   * ends a statement whose request was answered but whose cancel never arrived.
   * @default none
   */
  statementTimeoutMs?: number;
  /**
   * Which of the URL's hosts a connection may use (libpq's `target_session_attrs`). The
   * URL's own `target_session_attrs` wins; `null` leaves it to the URL (a replica's pool).
   * @default 'read-write': the server that takes writes, however many hosts the URL lists
   */
  targetSessionAttrs?: 'read-write' | null;
}

/** The `target_session_attrs` a connection string names, if any. */
export function sessionAttrsOf(url: string): string | null {
  const value = /[?&]target_session_attrs=([^&#]*)/.exec(url)?.[1];
  return value === undefined ? null : decodeURIComponent(value);
}

/** `url` naming the database `name` on the same server, with the same credentials. */
export function withDatabaseName(url: string, name: string): string {
  const named = new URL(url);
  named.pathname = `/${name}`;
  return named.toString();
}

/**
 * Seconds before reconnecting after `retries` failed attempts: postgres.js's own curve
 * (jittered, tripling), but capped at 1 s rather than its 20 s. Its LISTEN connection
 * (the event bus, the caches, the webhook worker) shares these options: with the default,
 * it came back ~10-19 s after PostgreSQL did, and every query queued meanwhile waited out
 * a reconnect delay before failing. A refused connection costs PostgreSQL nothing.
 */
export function reconnectDelaySeconds(retries: number): number {
  return (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, 1);
}

/**
 * postgres.js and Node codes, and PostgreSQL SQLSTATEs, that say the database is out of
 * reach (down, restarting, in crash recovery, or the connection cut), not that the
 * statement failed.
 */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovering)
  '08000', // connection_exception
  '08001', // sqlclient_unable_to_establish_sqlconnection
  '08003', // connection_does_not_exist
  '08006', // connection_failure
  // A standby, or a primary since made read-only: the server that takes writes is moving
  // (a failover under way). postgres.js leaves such a connection (patches/README.md).
  '25006', // read_only_sql_transaction
  'TARGET_SESSION_ATTRS_UNMET', // no host of the URL takes writes (patches/README.md)
]);

/**
 * Whether `error` (or an error it wraps: Drizzle's `cause`, GraphQL's `originalError`)
 * says the database is unavailable.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current = error;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    const { code, cause, originalError, errors } = current as {
      code?: unknown;
      cause?: unknown;
      originalError?: unknown;
      errors?: unknown;
    };
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    // Node's AggregateError when every address of a host refused.
    if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner))) return true;
    current = cause ?? originalError;
  }
  return false;
}

/** Connections `svc serve` keeps open to PostgreSQL per process. */
export const SERVE_POOL_SIZE = 10;

function targetSessionAttrs(
  url: string,
  options: DatabaseOptions,
): { target_session_attrs?: 'read-write' } {
  if (sessionAttrsOf(url) !== null || options.targetSessionAttrs === null) return {};
  return { target_session_attrs: 'read-write' };
}

/**
 * One pool per process; every server, command and test goes through here. The URL may
 * list several hosts (`postgres://u@h1:5432,h2:5432/db`): each connection takes the first
 * that accepts writes (docs/operations.md, "Failover"), the LISTEN connection included.
 */
export function createDatabase(url: string, options: DatabaseOptions = {}): Database {
  const sql = postgres(url, {
    max: options.max ?? SERVE_POOL_SIZE,
    // Notices (e.g. "schema already exists") are noise in structured logs.
    onnotice: () => {},
    backoff: reconnectDelaySeconds,
    // A statement waits for an idle connection rather than being pipelined onto a busy one,
    // behind a statement that may wait for another caller's lock: no head-of-line blocking
    // across callers (src/db/gate.ts). PostgreSQL runs one statement per connection at a
    // time either way. Needs the patched postgres.js (patches/README.md): 3.4.9's BEGIN
    // never took its connection with this setting.
    max_pipeline: 0,
    ...targetSessionAttrs(url, options),
    connection: {
      application_name: options.applicationName ?? 'svc',
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    },
  });
  const db = drizzle(sql, { casing: 'snake_case' });
  return {
    sql,
    db,
    close: (timeoutSeconds = 5) => sql.end({ timeout: timeoutSeconds }),
  };
}
