// copyRows (src/db/copy.ts): fresh rows written with COPY in the caller's transaction,
// every value as the database reads it back; a refused row rejects the write (postgres.js
// 3.4.9 left it waiting forever, porsager/postgres#1173, patched) and the transaction
// rolls back with nothing written.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { copyRows } from '../../src/db/copy.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
  await database.database.sql`
    create table copied (id int primary key, note text, data jsonb, at timestamptz)`;
});

afterAll(() => database.drop());

test('text with tabs, newlines and backslashes, NULL and JSON come back as written', async () => {
  const note = 'a\tb\nc\\d\re';
  await database.database.db.transaction((tx) =>
    copyRows(
      tx,
      'copied',
      ['id', 'note', 'data', 'at'],
      [
        [1, note, { quote: 'say "hi"\\', list: [1, null] }, '2026-11-26T10:00:00.000001Z'],
        [2, null, null, null],
      ],
    ),
  );
  const rows = await database.database.sql`
    select id, note, data, to_char(at at time zone 'UTC', 'US') as micro from copied order by id`;
  expect(rows).toEqual([
    { id: 1, note, data: { quote: 'say "hi"\\', list: [1, null] }, micro: '000001' },
    { id: 2, note: null, data: null, micro: null },
  ]);
});

test('a refused row rejects the write, and its transaction rolls back', async () => {
  const write = database.database.db.transaction(async (tx) => {
    await copyRows(tx, 'copied', ['id', 'note'], [[3, 'kept?']]);
    await copyRows(tx, 'copied', ['id', 'note'], [[1, 'the key is taken']]);
  });
  await expect(write).rejects.toMatchObject({ code: '23505' });
  const [row] = await database.database.sql<{ n: number }[]>`
    select count(*)::int as n from copied where id = 3`;
  expect(row!.n).toBe(0);
});
