// docs/scaling.md, "the workspace is the shard key": every table of the migrated schema,
// plugins' included, keys by `workspace_id` first (primary key, unique constraints and
// indexes, foreign keys), or is named below with the reason it may not. A new table or
// plugin that breaks the rule fails here.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/** Tables that are not distributed by workspace (docs/scaling.md, "Distributing it"). */
const NOT_DISTRIBUTED: Readonly<Record<string, string>> = {
  workspaces: 'the distribution root: a reference table',
  rate_events: 'keyed by client address before any workspace is known: kept on the coordinator',
};

/** Keys of distributed tables that may lead with another column, and why. */
const OTHER_KEYS: Readonly<Record<string, string>> = {
  // Operator records: `svc` commands, including those naming no workspace (kept local).
  account_records_pkey: 'an operator command record, on the coordinator with its table',
  // A platform number routes inbound chat to one workspace of the whole deployment.
  chat_connections_number_key: 'routing of inbound chat: a reference lookup of numbers',
};

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(() => db.drop());

interface Key {
  table: string;
  name: string;
  kind: string;
  first: string | null;
  references: string | null;
}

async function keys(): Promise<Key[]> {
  return db.database.sql<Key[]>`
    select c.relname as "table", i.relname as name,
      case when x.indisprimary then 'primary key' else 'unique' end as kind,
      (select a.attname from pg_attribute a
        where a.attrelid = x.indrelid and a.attnum = x.indkey[0]) as first,
      null as "references"
    from pg_index x
    join pg_class c on c.oid = x.indrelid
    join pg_class i on i.oid = x.indexrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and x.indisunique
    union all
    select c.relname, k.conname, 'foreign key',
      (select a.attname from pg_attribute a
        where a.attrelid = k.conrelid and a.attnum = k.conkey[1]),
      r.relname
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_class r on r.oid = k.confrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and k.contype = 'f'
    order by 1, 2`;
}

describe('the workspace is the shard key', () => {
  test('every table of the migrated schema holds workspace_id, or is named as not distributed', async () => {
    const without = await db.database.sql<{ table: string }[]>`
      select t.table_name as "table" from information_schema.tables t
      where t.table_schema = 'public' and t.table_type = 'BASE TABLE'
        and not exists (select 1 from information_schema.columns c
          where c.table_schema = 'public' and c.table_name = t.table_name
            and c.column_name = 'workspace_id')
      order by 1`;
    expect(without.map((row) => row.table).sort()).toEqual(Object.keys(NOT_DISTRIBUTED).sort());
  });

  test('every primary key, unique key and foreign key of a distributed table leads with workspace_id', async () => {
    const all = await keys();
    expect(all.length).toBeGreaterThan(20);
    const offenders = all
      .filter((key) => !(key.table in NOT_DISTRIBUTED) && !(key.name in OTHER_KEYS))
      // A foreign key to the distribution root is the shard column itself.
      .filter((key) => key.first !== 'workspace_id')
      .map((key) => `${key.table}: ${key.kind} ${key.name} leads with ${String(key.first)}`);
    expect(offenders).toEqual([]);
  });

  test('every exception named here still exists', async () => {
    const names = new Set((await keys()).map((key) => key.name));
    expect(Object.keys(OTHER_KEYS).filter((name) => !names.has(name))).toEqual([]);
  });
});
