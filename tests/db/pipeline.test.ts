// Every pool pipelines nothing (src/db/client.ts, max_pipeline 0): a statement waits for
// an idle connection instead of queuing behind a busy one's statement. postgres.js 3.4.9
// never handed a transaction its connection with that setting (its BEGIN skipped the hook
// once the pipeline was "full"); the patch (patches/README.md) makes it take it.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createDatabase, type Database } from '../../src/db/client.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const LOCK = 0x70697065;
let db: TestDatabase;
let pool: Database;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createDatabase(db.url, { max: 2, applicationName: 'pipeline test' });
});

afterAll(async () => {
  await pool.close();
  await db.drop();
});

/** Statements of this pool now waiting for LOCK in PostgreSQL. */
async function lockWaiters(): Promise<number> {
  const [row] = await db.database.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where application_name = 'pipeline test' and wait_event = 'advisory'`;
  return row?.n ?? 0;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setImmediate(resolve));
}

test('a transaction begun on an idle pool and one queued for a connection both run', async () => {
  const holder = await db.database.sql.reserve();
  await holder`select pg_advisory_lock(${LOCK})`;
  try {
    // Both connections wait for the lock; the transaction queues for one of them.
    const waiting = [1, 2].map(() => pool.sql`select pg_advisory_xact_lock(${LOCK})`.execute());
    await until(async () => (await lockWaiters()) === 2);
    const queued = pool.sql.begin((tx) => tx<{ n: number }[]>`select 2 as n`);
    await holder`select pg_advisory_unlock(${LOCK})`;
    await Promise.all(waiting);
    expect(await queued).toEqual([{ n: 2 }]);
    const idle = await pool.sql.begin(async (tx) => {
      await tx`create temporary table t (n int) on commit drop`;
      await tx`insert into t values (3)`;
      return tx<{ n: number }[]>`select n from t`;
    });
    expect(idle).toEqual([{ n: 3 }]);
  } finally {
    holder.release();
  }
});

test("a statement waits for an idle connection rather than behind a busy one's statement", async () => {
  const holder = await db.database.sql.reserve();
  await holder`select pg_advisory_lock(${LOCK})`;
  try {
    const blocked = pool.sql`select pg_advisory_xact_lock(${LOCK})`.execute();
    await until(async () => (await lockWaiters()) === 1);
    // Pipelined onto the busy connection, these would wait for the lock too.
    const quick = await Promise.all([1, 2, 3].map((n) => pool.sql`select ${n}::int as n`));
    expect(quick.map(([row]) => row?.n)).toEqual([1, 2, 3]);
    expect(await lockWaiters()).toBe(1);
    await holder`select pg_advisory_unlock(${LOCK})`;
    await blocked;
  } finally {
    holder.release();
  }
});
