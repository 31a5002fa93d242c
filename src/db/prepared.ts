import { sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgPreparedQuery, PreparedQueryConfig } from 'drizzle-orm/pg-core';
import type { Sql } from 'postgres';
import { drizzleOver, type Db } from './client.js';

/** What Drizzle's builders give `.prepare()`: a statement with placeholders for values. */
interface Preparable<R> {
  prepare(name: string): PgPreparedQuery<PreparedQueryConfig & { execute: R }>;
}

type Prepared<R> = PgPreparedQuery<PreparedQueryConfig & { execute: R }>;

/**
 * Drizzle over no connection: statements are built against it, never run through it.
 * Building needs only the dialect; running goes through the caller's database.
 */
const template = drizzleOver({
  unsafe() {
    throw new Error('a prepared statement runs through the database it is given');
  },
} as unknown as Sql);

/**
 * What a statement takes from the database it runs on: the postgres.js client (a pool, a
 * request's gate, a transaction) and Drizzle's query logger.
 */
interface SessionParts {
  client: unknown;
  logger: unknown;
}

function sessionOf(db: Db): SessionParts {
  return (db as unknown as { session: SessionParts }).session;
}

/**
 * A hot read built once per shape and run through any database. Drizzle builds a
 * statement's SQL anew on every call (its builders walk every column and condition, about
 * a tenth of a cheap request's CPU); one built here with `sql.placeholder`s costs only its
 * values and the mapping of its rows. It runs on the database it is given, so a request's
 * gate (its share of the pool, its cancellation) applies as to any statement, and
 * postgres.js prepares it on each connection by its text (src/db/gate.ts).
 *
 * `shape` names what varies in the SQL itself (which conditions are present), never a
 * value: a family has as many statements as shapes. `parts` (columns other domains add)
 * build a shape's statement the first time it is seen, so a shape's name must say them.
 */
export function preparedFamily<
  S extends string,
  V extends Record<string, unknown>,
  R,
  P extends unknown[] = [],
>(
  name: string,
  build: (db: Db, shape: S, ...parts: P) => Preparable<R>,
): (db: Db, shape: S, values: V, ...parts: P) => Promise<R> {
  const built = new Map<S, Prepared<R>>();
  return (db, shape, values, ...parts) => {
    let statement = built.get(shape);
    if (!statement) {
      statement = build(template, shape, ...parts).prepare(`${name}_${shape}`);
      built.set(shape, statement);
    }
    // The built statement's own fields, with the client and logger of the database it
    // runs on.
    const { client, logger } = sessionOf(db);
    const bound = Object.create(statement) as Prepared<R> & SessionParts;
    bound.client = client;
    bound.logger = logger;
    return bound.execute(values);
  };
}

/** {@link preparedFamily} of one shape. */
export function prepared<V extends Record<string, unknown>, R>(
  name: string,
  build: (db: Db) => Preparable<R>,
): (db: Db, values: V) => Promise<R> {
  const family = preparedFamily<'one', V, R>(name, (db) => build(db));
  return (db, values) => family(db, 'one', values);
}

/**
 * `column = any($name::uuid[])`: a list of ids as one array parameter, so one statement
 * serves every list length (`in ($1, $2, …)` would be a statement per length).
 */
export function anyUuid(column: PgColumn, name: string): SQL {
  return sql`${column} = any(${sql.placeholder(name)}::uuid[])`;
}
