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
}

/** `url` naming the database `name` on the same server, with the same credentials. */
export function withDatabaseName(url: string, name: string): string {
  const named = new URL(url);
  named.pathname = `/${name}`;
  return named.toString();
}

/** Connections `svc serve` keeps open to PostgreSQL per process. */
export const SERVE_POOL_SIZE = 10;

/** One pool per process; every server, command and test goes through here. */
export function createDatabase(url: string, options: DatabaseOptions = {}): Database {
  const sql = postgres(url, {
    max: options.max ?? SERVE_POOL_SIZE,
    // Notices (e.g. "schema already exists") are noise in structured logs.
    onnotice: () => {},
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
