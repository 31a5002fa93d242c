import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { MigrationLockTimeout, withMigrationLock } from '../../src/db/migrate.js';
import { silentLogger } from '../../src/log.js';
import { svc, finished, waitForOutput } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const LOCK_KEY = 0x73766301;
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase({ empty: true });
});

afterAll(() => db.drop());

describe('svc migrate', () => {
  test('two migrators started at once: one waits for the lock, both exit 0, each migration applies once', async () => {
    const holder = await db.database.sql.reserve();
    await holder`select pg_advisory_lock(${LOCK_KEY})`;
    const env = { SVC_DATABASE_URL: db.url };
    const first = svc(['migrate'], env);
    const second = svc(['migrate'], env);
    const results = [finished(first), finished(second)];
    // Both are asking for the lock the test holds before either may migrate.
    await Promise.all([
      waitForOutput(first, /waiting for the migration lock/),
      waitForOutput(second, /waiting for the migration lock/),
    ]);
    await holder`select pg_advisory_unlock(${LOCK_KEY})`;
    holder.release();
    const [a, b] = await Promise.all(results);
    expect([a?.code, b?.code]).toEqual([0, 0]);
    const applied = await db.database
      .sql`select hash, count(*)::int as n from drizzle.__drizzle_migrations group by hash`;
    expect(applied.length).toBeGreaterThan(0);
    expect(applied.every((row) => row.n === 1)).toBe(true);
    // Exactly one of the two applied anything (the core's and each plugin's sets).
    const applying = [a, b].filter((run) => run?.stdout.includes('"msg":"migrations applied"'));
    expect(applying).toHaveLength(1);
  }, 30_000);
});

describe('the migration lock', () => {
  test('gives up with a clear error once the wait runs out', async () => {
    const holder = await db.database.sql.reserve();
    await holder`select pg_advisory_lock(${LOCK_KEY})`;
    try {
      await expect(
        withMigrationLock(
          db.database,
          { log: silentLogger(), pollMs: 50, giveUpMs: 200 },
          async () => 'ran',
        ),
      ).rejects.toThrow(MigrationLockTimeout);
    } finally {
      await holder`select pg_advisory_unlock(${LOCK_KEY})`;
      holder.release();
    }
  });

  test('is released when the work fails, so the next migrator proceeds', async () => {
    const log = silentLogger();
    await expect(
      withMigrationLock(db.database, { log }, async () => {
        throw new Error('broken migration');
      }),
    ).rejects.toThrow('broken migration');
    await expect(
      withMigrationLock(db.database, { log, giveUpMs: 1000 }, async () => 'ran'),
    ).resolves.toBe('ran');
  });
});
