// The importer's mapping and commit (SPEC 2.10, 3): rows judged by the mapping with every
// reason, the states' refusals, exactly-once commits under a race, custom field values,
// import.completed, and addresses held in another workspace.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  createContactVia,
  dataOf,
  expectReason,
  freshWorkspaceHeaders,
} from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { holdTable, uploadFile, waiterOn } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

const MAP = `mutation ($id: UUID!, $mapping: [ImportColumnInput!]!) {
  importSetMapping(id: $id, mapping: $mapping) { id state mapping }
}`;
const COMMIT = `mutation ($id: UUID!) {
  importCommit(id: $id) { id state createdCount skippedCount committedAt }
}`;
const ROWS = `query ($id: UUID!) {
  importJob(id: $id) { state rows { line cells reason { code meta } contactId } }
}`;
const DEFINE = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }`;

interface RowData {
  line: number;
  cells: string[];
  reason: { code: string; meta: Record<string, unknown> } | null;
  contactId: string | null;
}

/** A fresh workspace with a `tier` (select) custom field, and its admin's headers. */
async function workspace() {
  const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
  const input = { name: 'tier', label: 'Tier', kind: 'select', options: ['Gold', 'Silver'] };
  dataOf((await svc.graph(DEFINE, { input }, headers)).body, 'defineField');
  return { headers, workspaceId };
}

async function stage(csv: string, headers: Record<string, string>): Promise<string> {
  return dataOf<{ id: string }>((await uploadFile(svc, csv, 'c.csv', headers)).body, 'importUpload')
    .id;
}

const FULL = [
  { column: 0, target: 'name' },
  { column: 1, target: 'identity:email' },
  { column: 2, target: 'identity:phone' },
  { column: 3, target: 'field:tier' },
];

async function map(id: string, headers: Record<string, string>, mapping = FULL) {
  return (await svc.graph(MAP, { id, mapping }, headers)).body;
}

async function rows(id: string, headers: Record<string, string>): Promise<RowData[]> {
  return dataOf<{ rows: RowData[] }>((await svc.graph(ROWS, { id }, headers)).body, 'importJob')
    .rows;
}

/**
 * Commits import `id` while another transaction holds the contacts table; once the commit
 * waits to write, that transaction gives `email` to a new contact named `name`. The commit
 * is refused whole as identity_taken, naming that contact: its id.
 */
async function commitWhileTaken(
  id: string,
  headers: Record<string, string>,
  workspaceId: string,
  name: string,
  email: string,
): Promise<string> {
  const lock = holdTable(svc, 'contacts');
  const tx = await lock.held;
  const commit = svc.graph(COMMIT, { id }, headers);
  await waiterOn(svc, 'contacts');
  const [late] = await tx<{ id: string }[]>`
    insert into contacts (workspace_id, name) values (${workspaceId}, ${name}) returning id`;
  await tx`
    insert into contact_identities (workspace_id, contact_id, channel, identifier, identifier_key)
    values (${workspaceId}, ${late!.id}, 'email', ${email}, ${email})`;
  await lock.release();
  expectReason((await commit).body, 'CONFLICT', 'identity_taken', { ownerContactId: late!.id });
  return late!.id;
}

describe('importFields', () => {
  test('offers the name, each kind of address and every live custom field', async () => {
    const { headers } = await workspace();
    const { body } = await svc.graph('{ importFields { key label kind } }', {}, headers);
    expect(dataOf(body, 'importFields')).toEqual([
      { key: 'name', label: 'Name', kind: 'name' },
      { key: 'identity:email', label: 'Email address', kind: 'identity' },
      { key: 'identity:phone', label: 'Phone number', kind: 'identity' },
      { key: 'field:tier', label: 'Tier', kind: 'select' },
    ]);
  });
});

describe('importSetMapping', () => {
  test('judges every row with SPEC 2.10’s reasons', async () => {
    const { headers } = await workspace();
    const holder = await createContactVia(
      svc,
      'Held Holder',
      [{ channel: 'email', identifier: 'held@example.com' }],
      headers,
    );
    const id = await stage(
      [
        'name,email,phone,tier',
        'Ada Lovelace,ada@example.com,+44 20 7946 0000,Gold', // 2: imports
        'Bea,,,Gold', // 3: no address
        ',cy@example.com,,', // 4: no name
        'Dee,HELD@example.com,,', // 5: held in the workspace
        'Eve,ada@example.com,,', // 6: an earlier row of the file holds it
        'Fay,fay@example.com,,Platinum', // 7: not an option of tier
        `${'G'.repeat(300)},g@example.com,,`, // 8: name past its cap
        'Hal,hal@example.com,n/a,', // 9: a phone with no digit
        'Ivy,ivy@example.com', // 10: fewer cells; still imports
      ].join('\n'),
      headers,
    );
    const mapped = dataOf<{ state: string; mapping: string[] }>(
      await map(id, headers),
      'importSetMapping',
    );
    expect(mapped).toEqual({
      id,
      state: 'mapped',
      mapping: ['name', 'identity:email', 'identity:phone', 'field:tier'],
    });
    const judged = await rows(id, headers);
    expect(judged.map((row) => [row.line, row.reason])).toEqual([
      [2, null],
      [3, { code: 'row_incomplete', meta: {} }],
      [4, { code: 'row_incomplete', meta: {} }],
      [5, { code: 'identity_taken_by', meta: { ownerName: 'Held Holder' } }],
      [6, { code: 'identity_taken', meta: {} }],
      [7, { code: 'value_kind_mismatch', meta: { field: 'tier', kind: 'select' } }],
      [8, { code: 'contact_details_invalid', meta: {} }],
      [9, { code: 'contact_details_invalid', meta: {} }],
      [10, { code: 'row_cell_count_mismatch', meta: { cells: 2, columns: 4 } }],
    ]);
    expect(judged.find((row) => row.line === 5)?.contactId).toBe(holder.id);
  });

  test('a second mapping judges the rows afresh, not by the first one’s reasons', async () => {
    const { headers } = await workspace();
    const id = await stage('name,email,phone,tier\nAda,ada@example.com,,\n', headers);
    // Mapped first to the empty phone column: no address.
    const phoneOnly = [FULL[0]!, { column: 2, target: 'identity:phone' }];
    dataOf(await map(id, headers, phoneOnly), 'importSetMapping');
    expect((await rows(id, headers))[0]?.reason).toEqual({ code: 'row_incomplete', meta: {} });
    dataOf(await map(id, headers, FULL.slice(0, 2)), 'importSetMapping');
    expect((await rows(id, headers))[0]?.reason).toBeNull();
  });

  test.each([
    ['a column the file lacks', [{ column: 9, target: 'name' }]],
    [
      'a target importFields does not offer',
      [...FULL.slice(0, 3), { column: 3, target: 'field:nope' }],
    ],
    ['no name', [{ column: 1, target: 'identity:email' }]],
    ['no address', [{ column: 0, target: 'name' }]],
    ['a target twice', [...FULL.slice(0, 2), { column: 2, target: 'identity:email' }]],
    ['a column twice', [...FULL.slice(0, 2), { column: 1, target: 'identity:phone' }]],
  ])('refuses %s with mapping_invalid', async (_why, mapping) => {
    const { headers } = await workspace();
    const id = await stage('name,email,phone,tier\nAda,ada@example.com,,\n', headers);
    expectReason(await map(id, headers, mapping), 'VALIDATION', 'mapping_invalid');
  });
});

describe('importCommit', () => {
  test('needs a mapping, creates the importable rows’ contacts once, then refuses again', async () => {
    const { headers, workspaceId } = await workspace();
    const id = await stage(
      'name,email,phone,tier\nAda Lovelace,ada@example.com,+44 20 7946 0000,Gold\nBea,,,\nIvy,ivy@example.com\n',
      headers,
    );
    expectReason((await svc.graph(COMMIT, { id }, headers)).body, 'CONFLICT', 'mapping_required');
    dataOf(await map(id, headers), 'importSetMapping');

    const committed = dataOf<Record<string, unknown>>(
      (await svc.graph(COMMIT, { id }, headers)).body,
      'importCommit',
    );
    expect(committed).toEqual({
      id,
      state: 'committed',
      createdCount: 2,
      skippedCount: 1,
      committedAt: expect.any(String),
    });
    const page = await svc.graph(
      `{ contactPage { total items { name identities { channel identifier } tier: field(name: "tier") } } }`,
      {},
      headers,
    );
    expect(dataOf(page.body, 'contactPage')).toEqual({
      total: 2,
      items: [
        {
          name: 'Ada Lovelace',
          identities: [
            { channel: 'email', identifier: 'ada@example.com' },
            { channel: 'phone', identifier: '+44 20 7946 0000' },
          ],
          tier: 'Gold',
        },
        {
          name: 'Ivy',
          identities: [{ channel: 'email', identifier: 'ivy@example.com' }],
          tier: null,
        },
      ],
    });
    const created = (await rows(id, headers)).filter((row) => row.contactId);
    expect(created.map((row) => row.line)).toEqual([2, 4]);

    expectReason((await svc.graph(COMMIT, { id }, headers)).body, 'CONFLICT', 'already_committed');
    expectReason(await map(id, headers), 'CONFLICT', 'mapping_locked');
    const events = await svc.db.database.sql`
      select name, data from events where workspace_id = ${workspaceId} and subject_id = ${id}
      order by at`;
    expect(events).toEqual([
      { name: 'import.staged', data: { importId: id, rows: 3 } },
      { name: 'import.completed', data: { importId: id, created: 2, merged: 0, skipped: 1 } },
    ]);
  });

  test('two racing commits create the contacts exactly once', async () => {
    const { headers } = await workspace();
    const csv = [
      'name,email,phone,tier',
      ...Array.from({ length: 50 }, (_, i) => `P${i},p${i}@example.com,,`),
    ];
    const id = await stage(csv.join('\n'), headers);
    dataOf(await map(id, headers), 'importSetMapping');
    const answers = await Promise.all([1, 2, 3].map(() => svc.graph(COMMIT, { id }, headers)));
    expect(answers.filter((answer) => !answer.body.errors)).toHaveLength(1);
    // Under way, a commit answers import_busy at once; ended, already_committed.
    for (const answer of answers.filter((a) => a.body.errors)) {
      expect(['import_busy', 'already_committed']).toContain(
        answer.body.errors![0]!.extensions.reason,
      );
      expect(answer.body.errors![0]!.extensions.code).toBe('CONFLICT');
    }
    const total = await svc.graph('{ contactPage { total } }', {}, headers);
    expect(dataOf(total.body, 'contactPage')).toEqual({ total: 50 });
  });

  test('an address another contact takes during the commit refuses it whole; it commits after', async () => {
    const { headers, workspaceId } = await workspace();
    const id = await stage(
      'name,email,phone,tier\nAda,ada@example.com,,\nBea,bea@example.com,,\n',
      headers,
    );
    await map(id, headers);
    // Judged already when it waits to write: bea@example.com was free.
    await commitWhileTaken(id, headers, workspaceId, 'Bea Late', 'bea@example.com');

    // Nothing of the commit stayed; committed again, Bea's row names her holder.
    const [count] = await svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from contacts where workspace_id = ${workspaceId}`;
    expect(count!.n).toBe(1);
    const done = dataOf((await svc.graph(COMMIT, { id }, headers)).body, 'importCommit');
    expect(done).toMatchObject({ state: 'committed', createdCount: 1, skippedCount: 1 });
    expect((await rows(id, headers)).map((row) => row.reason?.code ?? null)).toEqual([
      null,
      'identity_taken_by',
    ]);
  });

  test('a row whose address an earlier row of the file holds names that row’s new contact once committed', async () => {
    const { headers } = await workspace();
    const id = await stage(
      [
        'name,email,phone,tier',
        'Ada,ada@example.com,,', // 2: creates Ada
        'Eve,ADA@example.com,,', // 3: Ada's address, held by line 2
        'Bob,bob@example.com,+44 20 7946 0001,', // 4: creates Bob
        'Cy,,+44 20 7946 0001,', // 5: Bob's phone, held by line 4
      ].join('\n'),
      headers,
    );
    dataOf(await map(id, headers), 'importSetMapping');
    // Mapped: the holders are rows of the file, no contact yet.
    expect((await rows(id, headers)).map((row) => [row.reason, row.contactId])).toEqual([
      [null, null],
      [{ code: 'identity_taken', meta: {} }, null],
      [null, null],
      [{ code: 'identity_taken', meta: {} }, null],
    ]);
    dataOf((await svc.graph(COMMIT, { id }, headers)).body, 'importCommit');
    const [ada, eve, bob, cy] = await rows(id, headers);
    expect(ada!.contactId).toEqual(expect.any(String));
    expect(eve).toMatchObject({
      reason: { code: 'identity_taken_by', meta: { ownerName: 'Ada' } },
      contactId: ada!.contactId,
    });
    expect(cy).toMatchObject({
      reason: { code: 'identity_taken_by', meta: { ownerName: 'Bob' } },
      contactId: bob!.contactId,
    });
  });

  test('a commit judging every row as its mapping did writes no staged row; they read what it did', async () => {
    const { headers, workspaceId } = await workspace();
    const id = await stage(
      'name,email,phone,tier\nAda,ada@example.com,,Gold\nEve,ADA@example.com,,\nBea,,,\n',
      headers,
    );
    dataOf(await map(id, headers), 'importSetMapping');
    const versions = () => svc.db.database.sql<{ line: number; version: string }[]>`
      select line, xmin::text as version from import_rows
      where workspace_id = ${workspaceId} and import_id = ${id} order by line`;
    const mapped = await versions();
    const OUTCOMES = `query ($id: UUID!, $outcome: String) {
      importJob(id: $id) { rows(outcome: $outcome) { line contactId outcome } }
    }`;
    const read = async (outcome?: string) =>
      dataOf<{ rows: { line: number; contactId: string | null; outcome: string }[] }>(
        (await svc.graph(OUTCOMES, { id, outcome }, headers)).body,
        'importJob',
      ).rows;
    // Before the commit the contact Ada's row creates is named by no row.
    expect(await read()).toEqual([
      { line: 2, contactId: null, outcome: 'create' },
      { line: 3, contactId: null, outcome: 'skip' },
      { line: 4, contactId: null, outcome: 'skip' },
    ]);
    dataOf((await svc.graph(COMMIT, { id }, headers)).body, 'importCommit');
    // Only the row whose holder the commit created was written (it now names it).
    const committed = await versions();
    expect(
      committed.filter((row, i) => row.version !== mapped[i]!.version).map((row) => row.line),
    ).toEqual([3]);
    const [ada] = await svc.db.database.sql<{ id: string }[]>`
      select id from contacts where workspace_id = ${workspaceId} and name = 'Ada'`;
    expect(await read()).toEqual([
      { line: 2, contactId: ada!.id, outcome: 'created' },
      { line: 3, contactId: ada!.id, outcome: 'skipped' },
      { line: 4, contactId: null, outcome: 'skipped' },
    ]);
    expect((await read('created')).map((row) => row.line)).toEqual([2]);
    expect((await read('skipped')).map((row) => row.line)).toEqual([3, 4]);
    expect(await read('create')).toEqual([]);
  });

  /** 4,500 rows (three batches of the commit), each its own address unless `email` says. */
  function manyRows(email: (i: number) => string = (i) => `p${i}@example.com`): string {
    const lines = ['name,email,phone,tier'];
    for (let i = 0; i < 4_500; i += 1) lines.push(`P${i},${email(i)},,`);
    return lines.join('\n');
  }

  /** The stored row at `line` of the import (read beside the graph, which pages rows). */
  async function storedRow(workspaceId: string, id: string, line: number) {
    const [row] = await svc.db.database.sql<
      { reason: { code: string; meta: Record<string, unknown> } | null; contactId: string | null }[]
    >`select reason, contact_id as "contactId" from import_rows
      where workspace_id = ${workspaceId} and import_id = ${id} and line = ${line}`;
    return row!;
  }

  test('a commit of several batches names holders of later batches’ rows, and an address taken since the mapping', async () => {
    const { headers, workspaceId } = await workspace();
    // Line 3,000 (the second batch) repeats line 2's address; line 4,400 (the third) takes
    // an address a contact created after the mapping holds.
    const id = await stage(
      manyRows((i) =>
        i === 2_998 ? 'p0@example.com' : i === 4_398 ? 'late@example.com' : `p${i}@example.com`,
      ),
      headers,
    );
    dataOf(await map(id, headers), 'importSetMapping');
    const late = await createContactVia(
      svc,
      'Late',
      [{ channel: 'email', identifier: 'late@example.com' }],
      headers,
    );
    const done = dataOf((await svc.graph(COMMIT, { id }, headers)).body, 'importCommit');
    expect(done).toMatchObject({ state: 'committed', createdCount: 4_498, skippedCount: 2 });
    const first = await storedRow(workspaceId, id, 2);
    expect(await storedRow(workspaceId, id, 3_000)).toEqual({
      reason: { code: 'identity_taken_by', meta: { ownerName: 'P0' } },
      contactId: first.contactId,
    });
    expect(await storedRow(workspaceId, id, 4_400)).toEqual({
      reason: { code: 'identity_taken_by', meta: { ownerName: 'Late' } },
      contactId: late.id,
    });
    const [count] = await svc.db.database.sql<{ n: number; identities: number }[]>`
      select count(*)::int as n,
        (select count(*)::int from contact_identities where workspace_id = ${workspaceId})
          as identities
      from contacts where workspace_id = ${workspaceId}`;
    expect(count).toEqual({ n: 4_499, identities: 4_499 });
  });

  test('an address taken while a commit of several batches waits to write refuses it whole; it commits after', async () => {
    const { headers, workspaceId } = await workspace();
    const id = await stage(manyRows(), headers);
    dataOf(await map(id, headers), 'importSetMapping');
    // The first batch waits to be written, judged already: p1 was free.
    const late = await commitWhileTaken(id, headers, workspaceId, 'Late', 'p1@example.com');
    const [count] = await svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from contacts where workspace_id = ${workspaceId}`;
    expect(count!.n).toBe(1);
    // Committed again, the row whose address was taken is left out, naming its holder.
    const done = dataOf((await svc.graph(COMMIT, { id }, headers)).body, 'importCommit');
    expect(done).toMatchObject({ state: 'committed', createdCount: 4_499, skippedCount: 1 });
    expect((await storedRow(workspaceId, id, 3)).contactId).toBe(late);
  });

  test('a row refused identity_taken_by at commit names its holder’s contact', async () => {
    const { headers } = await workspace();
    const id = await stage('name,email,phone,tier\nAda,ada@example.com,,\n', headers);
    dataOf(await map(id, headers), 'importSetMapping');
    // The address is taken after the mapping judged the row free.
    const holder = await createContactVia(
      svc,
      'Ada Elsewhere',
      [{ channel: 'email', identifier: 'ada@example.com' }],
      headers,
    );
    const committed = dataOf<{ createdCount: number }>(
      (await svc.graph(COMMIT, { id }, headers)).body,
      'importCommit',
    );
    expect(committed.createdCount).toBe(0);
    expect(await rows(id, headers)).toEqual([
      {
        line: 2,
        cells: ['Ada', 'ada@example.com', '', ''],
        reason: { code: 'identity_taken_by', meta: { ownerName: 'Ada Elsewhere' } },
        contactId: holder.id,
      },
    ]);
  });

  test('a field archived after the mapping leaves its rows out as field_unknown', async () => {
    const { headers } = await workspace();
    const id = await stage(
      'name,email,phone,tier\nAda,ada@example.com,,Gold\nBea,bea@example.com,,\n',
      headers,
    );
    dataOf(await map(id, headers), 'importSetMapping');
    const fields = await svc.graph('{ fields { id name } }', {}, headers);
    const tier = dataOf<{ id: string }[]>(fields.body, 'fields')[0]!;
    await svc.graph(
      'mutation ($id: UUID!) { archiveField(id: $id) { id } }',
      { id: tier.id },
      headers,
    );
    const committed = dataOf<{ createdCount: number }>(
      (await svc.graph(COMMIT, { id }, headers)).body,
      'importCommit',
    );
    expect(committed.createdCount).toBe(1);
    expect((await rows(id, headers)).map((row) => row.reason?.code ?? null)).toEqual([
      'field_unknown',
      null,
    ]);
  });

  test('an address held only in another workspace imports as new', async () => {
    const other = await freshWorkspaceHeaders(svc);
    await createContactVia(
      svc,
      'Elsewhere',
      [{ channel: 'email', identifier: 'ada@example.com' }],
      other.headers,
    );
    const { headers } = await workspace();
    const id = await stage('name,email\nAda,ada@example.com\n', headers);
    dataOf(await map(id, headers, FULL.slice(0, 2)), 'importSetMapping');
    expect((await rows(id, headers))[0]?.reason).toBeNull();
    const committed = dataOf<{ createdCount: number }>(
      (await svc.graph(COMMIT, { id }, headers)).body,
      'importCommit',
    );
    expect(committed.createdCount).toBe(1);
  });

  test('a reason stored as text before reasons were codes reads as legacy_text', async () => {
    const { headers, workspaceId } = await workspace();
    const id = await stage('name,email\nAda,ada@example.com\n', headers);
    await svc.db.database.sql`
      update import_rows set reason = to_jsonb('duplicate of row 7'::text)
      where workspace_id = ${workspaceId} and import_id = ${id}`;
    expect((await rows(id, headers))[0]?.reason).toEqual({
      code: 'legacy_text',
      meta: { text: 'duplicate of row 7' },
    });
  });
});
