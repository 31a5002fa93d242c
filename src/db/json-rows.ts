import { sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

/**
 * Rows of a table carried as JSON inside another row's statement (a contact's identities
 * or open tasks in the contact's own row): `json_build_object` over the columns, keyed by
 * their property names, and the parsed objects given the types Drizzle would map them to.
 */
export interface JsonRows<T> {
  /** `json_build_object('key', column, …)` of one row, for `json_agg` in a subquery. */
  object: SQL;
  /** The parsed array as the table's rows: timestamps become Dates, in place. */
  revive(json: unknown): T[];
}

export function jsonRows<T>(columns: Record<string, PgColumn>): JsonRows<T> {
  const entries = Object.entries(columns);
  const pairs = entries.map(([key, column]) => sql`${sql.raw(`'${key}'`)}, ${column}`);
  // A timestamp column's JSON is ISO 8601 text; a date column stays text, as Drizzle's
  // `mode: 'string'` gives it.
  const timestamps = entries
    .filter(([, column]) => column.columnType === 'PgTimestamp')
    .map(([key]) => key);
  return {
    object: sql`json_build_object(${sql.join(pairs, sql`, `)})`,
    revive(json) {
      const rows = (json ?? []) as Record<string, unknown>[];
      for (const row of rows) {
        for (const key of timestamps) {
          const value = row[key];
          if (typeof value === 'string') row[key] = new Date(value);
        }
      }
      return rows as T[];
    },
  };
}
