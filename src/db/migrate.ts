import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import type { Sql } from 'postgres';
import type { Logger } from '../log.js';
import type { Database } from './client.js';

/** One folder of drizzle-kit migrations and the table that records which ran. */
export interface MigrationSet {
  /** `core`, or a plugin id. */
  name: string;
  folder: string;
  table: string;
}

export const MIGRATIONS_SCHEMA = 'drizzle';
/** The one advisory lock every migrator of this service takes ("svc" + 1). */
const MIGRATION_LOCK_KEY = 0x73766301;

const rootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The core's migrations: workspaces, accounts, auth, command records and every domain. */
export const coreMigrations: MigrationSet = {
  name: 'core',
  folder: path.join(rootDir, 'drizzle'),
  table: '__drizzle_migrations',
};

export interface LockOptions {
  log: Logger;
  /** How long one ask for the lock waits before logging and asking again. @default 5000 */
  pollMs?: number;
  /** When to stop asking. @default 300000 (5 minutes) */
  giveUpMs?: number;
}

export class MigrationLockTimeout extends Error {
  constructor(giveUpMs: number) {
    super(
      `gave up waiting for the migration lock after ${Math.round(giveUpMs / 1000)} seconds: ` +
        'another svc process is migrating this database (or died holding the lock)',
    );
    this.name = 'MigrationLockTimeout';
  }
}

/**
 * Runs `work` while holding the migration advisory lock on a reserved connection. The
 * migrator itself runs on the pool: drizzle reads its state outside its transaction, so
 * only a session-level lock held for the whole run keeps two migrators apart.
 */
export async function withMigrationLock<T>(
  database: Database,
  options: LockOptions,
  work: () => Promise<T>,
): Promise<T> {
  const pollMs = options.pollMs ?? 5000;
  const giveUpMs = options.giveUpMs ?? 300_000;
  const conn = await database.sql.reserve();
  try {
    await acquire(conn, pollMs, giveUpMs, options.log);
    try {
      return await work();
    } finally {
      await conn`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`;
    }
  } finally {
    conn.release();
  }
}

async function acquire(conn: Sql, pollMs: number, giveUpMs: number, log: Logger): Promise<void> {
  const [free] = await conn<{ locked: boolean }[]>`
    select pg_try_advisory_lock(${MIGRATION_LOCK_KEY}) as locked`;
  if (free?.locked) return;
  const started = Date.now();
  log.info('waiting for the migration lock held by another process');
  // Waiting inside PostgreSQL (bounded by lock_timeout) takes the lock the moment it is
  // released; each timeout is one "ask", logged so operators see why start-up pauses.
  await conn.unsafe(`set lock_timeout = ${Math.max(1, Math.floor(pollMs))}`);
  try {
    for (;;) {
      try {
        await conn`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '55P03') throw error;
        const waited = Date.now() - started;
        if (waited >= giveUpMs) throw new MigrationLockTimeout(giveUpMs);
        log.info({ waitedMs: waited }, 'waiting for the migration lock held by another process');
      }
    }
  } finally {
    await conn.unsafe('reset lock_timeout');
  }
}

/** Applies one set's pending migrations; call inside withMigrationLock. */
export async function applyMigrations(
  database: Database,
  set: MigrationSet,
  log: Logger,
): Promise<void> {
  const before = await appliedCount(database.sql, set);
  await migrate(database.db, {
    migrationsFolder: set.folder,
    migrationsTable: set.table,
    migrationsSchema: MIGRATIONS_SCHEMA,
  });
  const after = await appliedCount(database.sql, set);
  if (after > before) log.info({ set: set.name, applied: after - before }, 'migrations applied');
}

async function appliedCount(sql: Sql, set: MigrationSet): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from information_schema.tables
    where table_schema = ${MIGRATIONS_SCHEMA} and table_name = ${set.table}`;
  if (!row || row.count === 0) return 0;
  const [applied] = await sql<{ count: number }[]>`
    select count(*)::int as count from ${sql(MIGRATIONS_SCHEMA)}.${sql(set.table)}`;
  return applied?.count ?? 0;
}

interface JournalEntry {
  when: number;
  tag: string;
}

function journal(set: MigrationSet): JournalEntry[] {
  const file = path.join(set.folder, 'meta', '_journal.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { entries: JournalEntry[] }).entries;
}

/**
 * The sets whose newest known migration is not yet applied. Readiness reports these;
 * a database migrated further by a newer release still counts as current.
 */
export async function pendingMigrationSets(sql: Sql, sets: MigrationSet[]): Promise<string[]> {
  const pending: string[] = [];
  for (const set of sets) {
    const newest = journal(set).at(-1);
    if (!newest) continue;
    if ((await appliedCount(sql, set)) === 0) {
      pending.push(set.name);
      continue;
    }
    const [row] = await sql<{ newest: string | null }[]>`
      select max(created_at)::text as newest from ${sql(MIGRATIONS_SCHEMA)}.${sql(set.table)}`;
    if (!row?.newest || Number(row.newest) < newest.when) pending.push(set.name);
  }
  return pending;
}
