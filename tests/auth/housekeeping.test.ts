import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'drizzle-orm';
import { runHousekeeping } from '../../src/auth/housekeeping.js';
import { deleteOldAttempts, takeAttempt } from '../../src/auth/rate-limit.js';
import { deleteExpiredSessions } from '../../src/auth/sessions.js';
import type { PluginSweep } from '../../src/plugin-host/definition.js';
import type { LoadedPlugin } from '../../src/plugin-host/host.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { captureLogger, testConfig } from '../support/service.js';
import { createUser, createWorkspace, sessionCookieFor } from '../support/factories.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(() => db.drop());

describe('housekeeping', () => {
  test('removes expired sessions and keeps live ones', async () => {
    const workspace = await createWorkspace(db.database.db);
    const user = await createUser(db.database.db, workspace);
    await sessionCookieFor(db.database.db, user);
    await sessionCookieFor(db.database.db, user);
    await db.database.sql`
      update sessions set expires_at = now() - interval '1 second'
      where id = (select id from sessions where user_id = ${user.id} limit 1)`;
    expect(await deleteExpiredSessions(db.database.db)).toBe(1);
    const [left] = await db.database
      .sql`select count(*)::int as n from sessions where user_id = ${user.id}`;
    expect(left?.n).toBe(1);
  });

  test('drops attempts no window counts any more', async () => {
    const budget = { bucket: 'login', limit: 10, windowMs: 60_000 } as const;
    await takeAttempt(db.database.db, { ...budget, key: '192.0.2.1' });
    await takeAttempt(db.database.db, { ...budget, key: '192.0.2.2' });
    await db.database
      .sql`update rate_events set at = now() - interval '2 hours' where key = '192.0.2.1'`;
    expect(await deleteOldAttempts(db.database.db, 60 * 60 * 1000)).toBe(1);
    const keys = await db.database.sql`select key from rate_events order by key`;
    expect(keys.map((row) => row.key)).toEqual(['192.0.2.2']);
  });
});

test('the attempts sweep reports the rows it removed', async () => {
  const budget = { bucket: 'reset', limit: 10, windowMs: 60_000 } as const;
  for (const key of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
    await takeAttempt(db.database.db, { ...budget, key });
  }
  await db.database.sql`
    update rate_events set at = now() - interval '3 hours' where key like '198.51.100.%'
      and key <> '198.51.100.3'`;
  const removed = await runHousekeeping({
    config: testConfig(),
    database: db.database,
    log: captureLogger().log,
  });
  expect(removed.attempts).toBe(2);
  const left = await db.database.sql`select key from rate_events where key like '198.51.100.%'`;
  expect(left.map((row) => row.key)).toEqual(['198.51.100.3']);
});

describe('reset links', () => {
  test('go once expired and past the cooldown; live ones stay', async () => {
    const workspace = await createWorkspace(db.database.db);
    const user = await createUser(db.database.db, workspace);
    for (const expires of ["now() - interval '3 days'", "now() + interval '1 hour'"]) {
      await db.database.sql.unsafe(
        `insert into password_resets (workspace_id, user_id, secret_hash, expires_at)
         values ($1, $2, sha256(gen_random_uuid()::text::bytea), ${expires})`,
        [workspace.id, user.id],
      );
    }
    const removed = await runHousekeeping({
      config: testConfig(),
      database: db.database,
      log: captureLogger().log,
    });
    expect(removed['reset links']).toBe(1);
    const left = await db.database.sql`
      select count(*)::int as n from password_resets where user_id = ${user.id}`;
    expect(left[0]?.n).toBe(1);
  });
});

describe('plugin sweeps', () => {
  const plugin = (id: string, sweeps: PluginSweep[]): LoadedPlugin => ({
    manifest: { id } as LoadedPlugin['manifest'],
    folder: `/plugins/${id}`,
    definition: { id, sweeps },
    migrations: null,
  });

  test('run after the core’s, each named by its plugin; one failing leaves the rest run', async () => {
    const { log, lines } = captureLogger();
    const ran: string[] = [];
    const removed = await runHousekeeping({
      config: testConfig(),
      database: db.database,
      log,
      plugins: [
        plugin('broken', [
          {
            name: 'bad table',
            run: async (tx) => {
              ran.push('broken');
              await tx.execute(sql`delete from no_such_table`);
              return 0;
            },
          },
        ]),
        plugin('tidy', [
          {
            name: 'old rows',
            run: async () => {
              ran.push('tidy');
              return 3;
            },
          },
        ]),
      ],
    });
    expect(ran).toEqual(['broken', 'tidy']);
    expect(removed).toEqual(
      expect.objectContaining({ sessions: expect.any(Number), 'tidy: old rows': 3 }),
    );
    expect(removed).not.toHaveProperty('broken: bad table');
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'warn', sweep: 'broken: bad table' }),
    );
  });
});
