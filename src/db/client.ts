import postgres, { type Sql } from 'postgres';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';

export type Db = PostgresJsDatabase;

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
}

/** One pool per process; every server, command and test goes through here. */
export function createDatabase(url: string, options: DatabaseOptions = {}): Database {
  const sql = postgres(url, {
    max: options.max ?? 10,
    // Notices (e.g. "schema already exists") are noise in structured logs.
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'svc' },
  });
  const db = drizzle(sql, { casing: 'snake_case' });
  return {
    sql,
    db,
    close: (timeoutSeconds = 5) => sql.end({ timeout: timeoutSeconds }),
  };
}
