import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eq, getTableColumns, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import { createDatabase, type Database } from '../../src/db/client.js';
import { createQueryGate, isCancellation } from '../../src/db/gate.js';
import { prepared, preparedFamily, preparedSql } from '../../src/db/prepared.js';
import { workspaces } from '../../src/workspaces/tables.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

let db: TestDatabase;
let pool: Database;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createDatabase(db.url, { max: 3, applicationName: 'prepared test' });
});

afterAll(async () => {
  await pool.close();
  await db.drop();
});

const byName = prepared('test_workspace_by_name', (d) =>
  d
    .select({ id: workspaces.id, name: workspaces.name })
    .from(workspaces)
    .where(sql`${workspaces.name} = ${sql.placeholder('name')}`),
);

describe('statements built once and run through the database given', () => {
  test('a statement answers each run with its own values', async () => {
    const names = ['Prepared A', 'Prepared B'];
    for (const name of names) await pool.db.insert(workspaces).values({ name });
    const [a] = await byName(pool.db, { name: 'Prepared A' });
    const [b] = await byName(pool.db, { name: 'Prepared B' });
    expect([a?.name, b?.name]).toEqual(names);
    expect(await byName(pool.db, { name: 'nobody' })).toEqual([]);
  });

  test('a family builds each shape once and reuses it', async () => {
    const built: string[] = [];
    const family = preparedFamily('test_family', (d, shape: 'all' | 'named') => {
      built.push(shape);
      return d
        .select({ name: workspaces.name })
        .from(workspaces)
        .where(shape === 'named' ? sql`${workspaces.name} = ${sql.placeholder('name')}` : undefined)
        .orderBy(workspaces.name)
        .limit(sql.placeholder('limit'));
    });
    await pool.db.insert(workspaces).values({ name: 'Family one' });
    for (let i = 0; i < 3; i += 1) {
      expect(await family(pool.db, 'named', { name: 'Family one', limit: 5 })).toEqual([
        { name: 'Family one' },
      ]);
      expect(await family(pool.db, 'all', { limit: 1 })).toHaveLength(1);
    }
    expect(built).toEqual(['named', 'all']);
  });

  test('its rows are the objects Drizzle’s own select makes: values decoded, nulls kept', async () => {
    const whole = prepared('test_workspace_whole', (d) =>
      d
        .select({
          ...getTableColumns(workspaces),
          upper: sql<string>`upper(${workspaces.name})`,
          since: sql<Date>`${workspaces.createdAt}`.mapWith(workspaces.createdAt),
        })
        .from(workspaces)
        .where(sql`${workspaces.name} = ${sql.placeholder('name')}`),
    );
    const [made] = await pool.db
      .insert(workspaces)
      .values({ name: 'Decoded', deactivatedAt: new Date('2026-01-02T03:04:05.678Z') })
      .returning();
    await pool.db.insert(workspaces).values({ name: 'Decoded' });
    const rows = await whole(pool.db, { name: 'Decoded' });
    const direct = await pool.db
      .select({
        ...getTableColumns(workspaces),
        upper: sql<string>`upper(${workspaces.name})`,
        since: sql<Date>`${workspaces.createdAt}`.mapWith(workspaces.createdAt),
      })
      .from(workspaces)
      .where(eq(workspaces.name, 'Decoded'));
    expect(rows).toEqual(direct);
    const row = rows.find((r) => r.id === made?.id);
    expect(row?.deactivatedAt).toEqual(new Date('2026-01-02T03:04:05.678Z'));
    expect(row?.since).toBeInstanceOf(Date);
    expect(row?.upper).toBe('DECODED');
    expect(rows.find((r) => r.id !== made?.id)?.deactivatedAt).toBeNull();
  });

  test('a nested selection is mapped into its objects as Drizzle maps it', async () => {
    const nested = prepared('test_workspace_nested', (d) =>
      d
        .select({ workspace: { id: workspaces.id, name: workspaces.name }, one: sql<number>`1` })
        .from(workspaces)
        .where(sql`${workspaces.name} = ${sql.placeholder('name')}`),
    );
    const [made] = await pool.db.insert(workspaces).values({ name: 'Nested' }).returning();
    expect(await nested(pool.db, { name: 'Nested' })).toEqual([
      { workspace: { id: made?.id, name: 'Nested' }, one: 1 },
    ]);
  });

  test('in a transaction it sees the transaction’s own rows, and nobody else does', async () => {
    await pool.db
      .transaction(async (tx) => {
        await tx.insert(workspaces).values({ name: 'Uncommitted' });
        expect(await byName(tx, { name: 'Uncommitted' })).toHaveLength(1);
        expect(await byName(pool.db, { name: 'Uncommitted' })).toEqual([]);
        tx.rollback();
      })
      .catch(() => {});
    expect(await byName(pool.db, { name: 'Uncommitted' })).toEqual([]);
  });

  test('through a request’s gate it is cancelled with the request', async () => {
    const gate = createQueryGate(pool, { share: 1 });
    const controller = new AbortController();
    controller.abort();
    const error = await byName(gate.forRequest('ada', controller.signal).db, { name: 'x' }).catch(
      (e: unknown) => e,
    );
    expect(isCancellation(error)).toBe(true);
  });

  test('it reports its statement to the query logger of the database it runs on', async () => {
    const logged: string[] = [];
    const logging = drizzle(pool.sql, {
      casing: 'snake_case',
      logger: { logQuery: (query) => void logged.push(query) },
    });
    await byName(logging, { name: 'x' });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/from "workspaces" where "workspaces"."name" = \$1/);
  });
});

describe('raw statements built once (preparedSql)', () => {
  test('one build serves every run, each with its values (arrays too), prepared on the connection', async () => {
    let builds = 0;
    const rename = preparedSql<{ ids: string[]; suffix: string }, { name: string }>(() => {
      builds += 1;
      return sql`update ${workspaces} set name = name || ${sql.placeholder('suffix')}::text
        where id = any(${sql.placeholder('ids')}::uuid[]) returning name`;
    });
    const made = await pool.db
      .insert(workspaces)
      .values([{ name: 'Raw A' }, { name: 'Raw B' }])
      .returning({ id: workspaces.id });
    const ids = made.map((row) => row.id);
    expect((await rename(pool.db, { ids, suffix: '1' })).map((r) => r.name).sort()).toEqual([
      'Raw A1',
      'Raw B1',
    ]);
    expect(await rename(pool.db, { ids: ids.slice(1), suffix: '2' })).toEqual([
      { name: 'Raw B12' },
    ]);
    expect(await rename(pool.db, { ids: [], suffix: '3' })).toEqual([]);
    expect(builds).toBe(1);
    // Prepared on the server: its one connection keeps it among its prepared statements.
    const single = createDatabase(db.url, { max: 1, applicationName: 'prepared test' });
    try {
      await rename(single.db, { ids, suffix: '' });
      const [kept] = await single.sql<{ n: number }[]>`
        select count(*)::int as n from pg_prepared_statements
        where statement like '%name || $1::text%' and statement not like '%pg_prepared%'`;
      expect(kept?.n).toBe(1);
    } finally {
      await single.close();
    }
  });

  test('in a transaction it writes with the transaction, and a rollback undoes it', async () => {
    const insert = preparedSql<{ name: string }, { id: string }>(
      () => sql`insert into ${workspaces} (name) values (${sql.placeholder('name')}) returning id`,
    );
    await pool.db
      .transaction(async (tx) => {
        expect(await insert(tx, { name: 'Raw uncommitted' })).toHaveLength(1);
        expect(await byName(tx, { name: 'Raw uncommitted' })).toHaveLength(1);
        tx.rollback();
      })
      .catch(() => {});
    expect(await byName(pool.db, { name: 'Raw uncommitted' })).toEqual([]);
  });
});
