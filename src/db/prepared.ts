import { Column, fillPlaceholders, is, sql, type SQL } from 'drizzle-orm';
import type {
  PgColumn,
  PgDialect,
  PgPreparedQuery,
  PreparedQueryConfig,
} from 'drizzle-orm/pg-core';
import type { Sql } from 'postgres';
import { drizzleOver, type Db } from './client.js';
import { rowObjectMaker } from './row-object.js';

/** What Drizzle's builders give `.prepare()`: a statement with placeholders for values. */
interface Preparable<R> {
  prepare(name: string): PgPreparedQuery<PreparedQueryConfig & { execute: R }>;
}

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
  client: Pick<Sql, 'unsafe'>;
  logger: { logQuery(query: string, params: unknown[]): void };
}

function sessionOf(db: Db): SessionParts {
  return (db as unknown as { session: SessionParts }).session;
}

/** A selected value's place in the row object and what turns the driver's value into it. */
interface SelectedField {
  path: string[];
  field: unknown;
}

/** The parts of Drizzle's prepared statement (not in its typings) a run needs. */
interface BuiltStatement {
  queryString: string;
  params: unknown[];
  fields?: SelectedField[];
  customResultMapper?: unknown;
}

type Decode = ((value: unknown) => unknown) | null;

/** The column's or expression's decoder; null where the driver's value is the value. */
function decoderOf(field: unknown): Decode {
  const decoder = is(field, Column)
    ? field
    : ((field as { decoder?: Column }).decoder ??
      (field as { _: { sql: { decoder: Column } } })._?.sql.decoder ??
      (field as { sql: { decoder: Column } }).sql.decoder);
  if (decoder.mapFromDriverValue === Column.prototype.mapFromDriverValue) return null;
  return (value) => decoder.mapFromDriverValue(value);
}

/**
 * Turns the rows of a flat selection (a key per value) into objects, with each value's
 * decoder worked out once per statement. Drizzle's own mapping works out every value's
 * kind of field, for every row, on every run: a fifth of a 50-row read's CPU.
 */
function flatRowMapper(fields: SelectedField[]): (rows: unknown[][]) => unknown[] {
  const mapRow = rowObjectMaker(
    fields.map(({ path }) => path[0] as string),
    fields.map(({ field }) => decoderOf(field)),
  );
  return (rows) => rows.map(mapRow);
}

/**
 * How a built statement runs on a database: its text and parameters as Drizzle built
 * them, sent through the database's client (prepared there by its text), and its rows
 * as Drizzle would map them. A nested selection (`{ contact: contacts }`, whose objects
 * a join may null) keeps Drizzle's own run.
 */
function runnerOf<R>(
  statement: PgPreparedQuery<PreparedQueryConfig & { execute: R }>,
): (db: Db, values: Record<string, unknown>) => Promise<R> {
  const built = statement as unknown as BuiltStatement;
  const { queryString, params, fields } = built;
  const flat = fields && !built.customResultMapper && fields.every(({ path }) => path.length === 1);
  if (!flat) {
    return (db, values) => {
      // The built statement's own fields, with the client and logger of `db`.
      const bound = Object.create(statement) as typeof statement & SessionParts;
      Object.assign(bound, sessionOf(db));
      return bound.execute(values);
    };
  }
  const mapRows = flatRowMapper(fields);
  return async (db, values) => {
    const { client, logger } = sessionOf(db);
    const filled = fillPlaceholders(params, values);
    logger.logQuery(queryString, filled);
    const rows = await client.unsafe(queryString, filled as never[], { prepare: true }).values();
    return mapRows(rows) as R;
  };
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
  const built = new Map<S, (db: Db, values: V) => Promise<R>>();
  return (db, shape, values, ...parts) => {
    let run = built.get(shape);
    if (!run) {
      run = runnerOf(build(template, shape, ...parts).prepare(`${name}_${shape}`));
      built.set(shape, run);
    }
    return run(db, values);
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

/**
 * A hot statement written as raw SQL (`sql` with `sql.placeholder`s for every value), built
 * once and run as a prepared statement. `db.execute` builds the text anew on every call
 * (a claim's: ~0.5 ms of the service's CPU) and sends it unnamed, so PostgreSQL parses
 * and plans it on every run too (a claim's plan: ~0.4 ms); prepared by its text on each
 * connection, it is parsed once and, once PostgreSQL finds its generic plan no costlier,
 * planned once. Answers the rows as objects, as `db.execute` does.
 */
export function preparedSql<V extends Record<string, unknown>, R>(
  build: () => SQL,
): (db: Db, values: V) => Promise<R[]> {
  let built: { sql: string; params: unknown[] } | null = null;
  return (db, values) => {
    built ??= (template as unknown as { dialect: PgDialect }).dialect.sqlToQuery(build());
    const { client, logger } = sessionOf(db);
    const filled = fillPlaceholders(built.params, values);
    logger.logQuery(built.sql, filled);
    return client.unsafe(built.sql, filled as never[], { prepare: true }) as unknown as Promise<
      R[]
    >;
  };
}
