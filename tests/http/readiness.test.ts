import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import postgres from 'postgres';
import { createTestDatabase } from '../support/database.js';
import { adminDatabaseUrl, fixturePluginsDir } from '../support/env.js';
import { waitFor } from '../support/pg-cluster.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: { dir: fixturePluginsDir } });
});

afterAll(() => svc.stop());

async function readiness(): Promise<{ status: number; body: unknown }> {
  const response = await svc.request(`/api/readyz`);
  return { status: response.status, body: await response.json() };
}

/** Runs `check` while the newest recorded migration of `table` is missing, then puts it back. */
async function withNewestMigrationForgotten(table: string, check: () => Promise<void>) {
  const { sql } = svc.db.database;
  const [newest] = await sql<{ id: number; hash: string; created_at: string }[]>`
    delete from drizzle.${sql(table)}
    where id = (select max(id) from drizzle.${sql(table)})
    returning id, hash, created_at`;
  if (!newest) throw new Error(`${table} records no migration`);
  try {
    await check();
  } finally {
    await sql`insert into drizzle.${sql(table)} ${sql(newest, 'id', 'hash', 'created_at')}`;
  }
}

describe('readiness', () => {
  test.each([
    ['core', '__drizzle_migrations'],
    ['probe', '__drizzle_migrations_probe'],
  ])('answers 503 naming the %s migrations while they are behind', async (set, table) => {
    await withNewestMigrationForgotten(table, async () => {
      expect(await readiness()).toEqual({
        status: 503,
        body: { status: 'migrations pending', sets: [set] },
      });
    });
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ready' } });
  });

  test('answers 503 while the database refuses connections, and ready again once it accepts them', async () => {
    const admin = postgres(adminDatabaseUrl, { max: 1, onnotice: () => {} });
    const name = svc.db.name;
    try {
      await admin.unsafe(`alter database "${name}" allow_connections false`);
      await admin`select pg_terminate_backend(pid) from pg_stat_activity
        where datname = ${name} and pid <> pg_backend_pid()`;
      expect(await readiness()).toEqual({
        status: 503,
        body: { status: 'database unreachable' },
      });
    } finally {
      await admin.unsafe(`alter database "${name}" allow_connections true`);
      await admin.end();
    }
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ready' } });
  });

  test('answers 503 while the server it reaches does not take writes, and a write answers UNAVAILABLE', async () => {
    // target_session_attrs=primary accepts a primary that is read-only by default, which
    // the default read-write refuses outright (tests/db/failover-driver.test.ts).
    const db = await createTestDatabase();
    const primaryOnly = await startTestService({
      db: { ...db, url: `${db.url}?target_session_attrs=primary` },
    });
    const admin = postgres(adminDatabaseUrl, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`alter database "${db.name}" set default_transaction_read_only = on`);
      await admin`select pg_terminate_backend(pid) from pg_stat_activity
        where datname = ${db.name} and pid <> pg_backend_pid()`;
      // The pool's connections were ended: until it has reconnected, readyz says unreachable.
      let answer: { status: number; retryAfter: string | null; body: unknown } | undefined;
      await waitFor('readyz to find the server read-only', async () => {
        const response = await primaryOnly.request('/api/readyz');
        const body = await response.json();
        answer = { status: response.status, retryAfter: response.headers.get('retry-after'), body };
        return (body as { status: string }).status !== 'database unreachable';
      });
      expect(answer).toEqual({
        status: 503,
        retryAfter: '1',
        body: { status: 'database read-only' },
      });
      const write = await primaryOnly.graph(
        'mutation { createContact(input: { name: "Ro" }) { id } }',
      );
      expect(write.status).toBe(503);
      expect(write.body.errors?.[0]?.extensions).toEqual({
        code: 'UNAVAILABLE',
        reason: 'database_unavailable',
        meta: { retryAfter: 1 },
      });
    } finally {
      await admin.unsafe(`alter database "${db.name}" reset default_transaction_read_only`);
      await admin.end();
      await primaryOnly.stop();
      await db.drop();
    }
  });
});
