// An import that merges rows into the contacts holding their addresses (issue 28, part 4):
// `existingContacts: MERGE` on the mapping, each outcome a row reports, the default left as
// SPEC 2.10 says, field values by the merge rule through the fields plugin, and another
// workspace's contacts never merged into.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  createContactVia,
  dataOf,
  freshWorkspaceHeaders,
  type ContactData,
} from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { uploadFile } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

const MAP = `mutation ($id: UUID!, $mapping: [ImportColumnInput!]!, $existing: ImporterExistingContacts) {
  importSetMapping(id: $id, mapping: $mapping, existingContacts: $existing) {
    state existingContacts
  }
}`;
const MAP_DEFAULT = `mutation ($id: UUID!, $mapping: [ImportColumnInput!]!) {
  importSetMapping(id: $id, mapping: $mapping) { state existingContacts }
}`;
const COMMIT = `mutation ($id: UUID!) {
  importCommit(id: $id) { state createdCount mergedCount skippedCount }
}`;
const ROWS = `query ($id: UUID!, $outcome: String) {
  importJob(id: $id) { rows(outcome: $outcome) { line reason { code meta } contactId outcome } }
}`;
const CONTACT = `query ($id: UUID!) {
  contact(id: $id) { name updatedAt identities { identifier } fieldValues }
}`;
const DEFINE = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }`;
const WRITE = `mutation ($id: UUID!, $values: JSON!) {
  writeContactFields(contactId: $id, values: $values) { id }
}`;

interface RowData {
  line: number;
  reason: { code: string; meta: Record<string, unknown> } | null;
  contactId: string | null;
  outcome: string | null;
}

const MAPPING = [
  { column: 0, target: 'name' },
  { column: 1, target: 'identity:email' },
  { column: 2, target: 'identity:phone' },
  { column: 3, target: 'field:tier' },
  { column: 4, target: 'field:remark' },
];
const HEADER = 'name,email,phone,tier,remark';

/** A fresh workspace with `tier` (select) and `remark` (text) fields. */
async function workspace() {
  const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
  for (const input of [
    { name: 'tier', label: 'Tier', kind: 'select', options: ['Gold', 'Silver'] },
    { name: 'remark', label: 'Remark', kind: 'text' },
  ]) {
    dataOf((await svc.graph(DEFINE, { input }, headers)).body, 'defineField');
  }
  return { headers, workspaceId };
}

type Headers = Record<string, string>;

async function holder(headers: Headers, name: string, email: string, values?: object) {
  const contact = await createContactVia(
    svc,
    name,
    [{ channel: 'email', identifier: email }],
    headers,
  );
  if (values)
    dataOf(
      (await svc.graph(WRITE, { id: contact.id, values }, headers)).body,
      'writeContactFields',
    );
  return contact;
}

/** Stages `lines` under the header and maps them; answers the import's id. */
async function mapped(headers: Headers, lines: string[], existing: string | null = 'MERGE') {
  const { body } = await uploadFile(svc, [HEADER, ...lines].join('\n'), 'c.csv', headers);
  const { id } = dataOf<{ id: string }>(body, 'importUpload');
  const answer =
    existing === null
      ? await svc.graph(MAP_DEFAULT, { id, mapping: MAPPING }, headers)
      : await svc.graph(MAP, { id, mapping: MAPPING, existing }, headers);
  const done = dataOf<{ existingContacts: string }>(answer.body, 'importSetMapping');
  expect(done.existingContacts).toBe(existing ?? 'SKIP');
  return id;
}

async function rows(id: string, headers: Headers, outcome?: string): Promise<RowData[]> {
  const { body } = await svc.graph(ROWS, { id, outcome }, headers);
  return dataOf<{ rows: RowData[] }>(body, 'importJob').rows;
}

async function commit(id: string, headers: Headers) {
  return dataOf<Record<string, unknown>>(
    (await svc.graph(COMMIT, { id }, headers)).body,
    'importCommit',
  );
}

async function contact(id: string, headers: Headers) {
  const read = dataOf<{
    name: string;
    updatedAt: string;
    identities: { identifier: string }[];
    fieldValues: Record<string, unknown>;
  }>((await svc.graph(CONTACT, { id }, headers)).body, 'contact');
  return { ...read, identities: read.identities.map((i) => i.identifier).sort() };
}

describe('the default (SPEC 2.10)', () => {
  test('a row holding an existing contact’s address is skipped and the contact left as it was', async () => {
    const { headers } = await workspace();
    const ada = await holder(headers, 'Ada', 'ada@example.com');
    const id = await mapped(headers, ['Ada L,ADA@example.com,+1 555 0100,Gold,hi'], null);
    const judged = await rows(id, headers);
    expect(judged).toEqual([
      {
        line: 2,
        reason: { code: 'identity_taken_by', meta: { ownerName: 'Ada' } },
        contactId: ada.id,
        outcome: 'skip',
      },
    ]);
    expect(await commit(id, headers)).toEqual({
      state: 'committed',
      createdCount: 0,
      mergedCount: 0,
      skippedCount: 1,
    });
    expect((await rows(id, headers))[0]?.outcome).toBe('skipped');
    const after = await contact(ada.id, headers);
    expect(after.identities).toEqual(['ada@example.com']);
    expect(after.fieldValues).toEqual({});
  });
});

describe('existingContacts: MERGE', () => {
  test('merges a row into the contact holding its address: its new address added, values by the merge rule', async () => {
    const { headers, workspaceId } = await workspace();
    const ada = await holder(headers, 'Ada', 'ada@example.com', { tier: 'Gold' });
    const id = await mapped(headers, [
      'Ada Lovelace,ADA@example.com,+1 555 0100,Silver,met at the fair',
      'Bea,bea@example.com,,Gold,',
    ]);
    expect(await rows(id, headers)).toEqual([
      { line: 2, reason: null, contactId: ada.id, outcome: 'merge' },
      { line: 3, reason: null, contactId: null, outcome: 'create' },
    ]);
    expect(await commit(id, headers)).toEqual({
      state: 'committed',
      createdCount: 1,
      mergedCount: 1,
      skippedCount: 0,
    });
    const [merged, created] = await rows(id, headers);
    expect(merged).toEqual({ line: 2, reason: null, contactId: ada.id, outcome: 'merged' });
    expect(created).toEqual({
      line: 3,
      reason: null,
      contactId: expect.any(String),
      outcome: 'created',
    });
    const after = await contact(ada.id, headers);
    // The name stays the contact's; its value wins where both have one, the row fills the rest.
    expect(after.name).toBe('Ada');
    expect(after.identities).toEqual(['+1 555 0100', 'ada@example.com']);
    expect(after.fieldValues).toEqual({ tier: 'Gold', remark: 'met at the fair' });
    expect(new Date(after.updatedAt).getTime()).toBeGreaterThan(new Date(ada.updatedAt).getTime());
    // The rows that merged are read back by their outcome, as a receiver of the event does.
    expect((await rows(id, headers, 'merged')).map((row) => row.contactId)).toEqual([ada.id]);
    const events = await svc.db.database.sql`
      select name, data from events where workspace_id = ${workspaceId} and at >= (
        select created_at from imports where id = ${id}) order by at`;
    expect(events).toEqual([
      { name: 'import.staged', data: { importId: id, rows: 2 } },
      { name: 'import.completed', data: { importId: id, created: 1, merged: 1, skipped: 0 } },
    ]);
  });

  test('two rows of one file matching the same contact both merge, the first filling first', async () => {
    const { headers } = await workspace();
    const ada = await holder(headers, 'Ada', 'ada@example.com');
    const id = await mapped(headers, [
      'Ada,ada@example.com,,Silver,',
      'Ada again,,+1 555 0100,Gold,second',
      'Ada thrice,ada@example.com,+1 555 0100,Gold,third',
      'Ada four,ADA@example.com,+1 555 0111,,',
    ]);
    // Line 3 holds only a phone nobody holds: a new contact, which line 5 can't join.
    expect(
      (await rows(id, headers)).map((row) => [row.line, row.outcome, row.reason?.code]),
    ).toEqual([
      [2, 'merge', undefined],
      [3, 'create', undefined],
      [4, 'skip', 'identity_taken_by_several'],
      [5, 'merge', undefined],
    ]);
    const refused = (await rows(id, headers))[2]!;
    expect(refused.reason?.meta).toEqual({ ownerNames: ['Ada'], contactIds: [ada.id], lines: [3] });
    expect(await commit(id, headers)).toEqual({
      state: 'committed',
      createdCount: 1,
      mergedCount: 2,
      skippedCount: 1,
    });
    const after = await contact(ada.id, headers);
    expect(after.identities).toEqual(['+1 555 0111', 'ada@example.com']);
    expect(after.fieldValues).toEqual({ tier: 'Silver' });
  });

  test('rows of the file holding one new person’s addresses make one contact', async () => {
    const { headers } = await workspace();
    const id = await mapped(headers, [
      'Cy,cy@example.com,,,first',
      'Cy Young,CY@example.com,+1 555 0200,Gold,second',
      'C. Young,,+1 (555) 0200,Silver,',
    ]);
    expect((await rows(id, headers)).map((row) => [row.outcome, row.contactId])).toEqual([
      ['create', null],
      ['merge', null],
      ['merge', null],
    ]);
    expect(await commit(id, headers)).toEqual({
      state: 'committed',
      createdCount: 1,
      mergedCount: 2,
      skippedCount: 0,
    });
    const done = await rows(id, headers);
    const cy = done[0]!.contactId!;
    expect(done.map((row) => [row.outcome, row.contactId])).toEqual([
      ['created', cy],
      ['merged', cy],
      ['merged', cy],
    ]);
    const after = await contact(cy, headers);
    expect(after.name).toBe('Cy');
    expect(after.identities).toEqual(['+1 555 0200', 'cy@example.com']);
    expect(after.fieldValues).toEqual({ remark: 'first', tier: 'Gold' });
  });

  test('a row whose addresses two contacts hold is refused, and neither contact changes', async () => {
    const { headers } = await workspace();
    const ada = await holder(headers, 'Ada', 'ada@example.com');
    const bea = await createContactVia(
      svc,
      'Bea',
      [{ channel: 'phone', identifier: '+1 555 0300' }],
      headers,
    );
    const id = await mapped(headers, ['Ada or Bea,ada@example.com,+1 555 0300,Gold,']);
    expect(await rows(id, headers)).toEqual([
      {
        line: 2,
        reason: {
          code: 'identity_taken_by_several',
          meta: { ownerNames: ['Ada', 'Bea'], contactIds: [ada.id, bea.id], lines: [] },
        },
        contactId: null,
        outcome: 'skip',
      },
    ]);
    expect(await commit(id, headers)).toEqual({
      state: 'committed',
      createdCount: 0,
      mergedCount: 0,
      skippedCount: 1,
    });
    expect((await contact(ada.id, headers)).identities).toEqual(['ada@example.com']);
    expect((await contact(bea.id, headers)).fieldValues).toEqual({});
  });

  test('a merge past the contact’s identity cap is refused as identities_full', async () => {
    const { headers, workspaceId } = await workspace();
    const ada = await holder(headers, 'Ada', 'ada@example.com');
    // 49 more identities: the contact holds the cap of 50.
    await svc.db.database.sql`
      insert into contact_identities (workspace_id, contact_id, channel, identifier, identifier_key)
      select ${workspaceId}, ${ada.id}, 'phone', '+1 555 ' || n, '+1555' || n
      from generate_series(1000, 1048) as n`;
    const id = await mapped(headers, [
      'Ada,ada@example.com,+1 555 9999,Gold,',
      'Ada,ada@example.com,,Gold,',
    ]);
    expect(
      (await rows(id, headers)).map((row) => [row.outcome, row.reason, row.contactId]),
    ).toEqual([
      ['skip', { code: 'identities_full', meta: { max: 50 } }, ada.id],
      ['merge', null, ada.id],
    ]);
    expect(await commit(id, headers)).toMatchObject({ mergedCount: 1, skippedCount: 1 });
    expect((await contact(ada.id, headers)).fieldValues).toEqual({ tier: 'Gold' });
  });

  test('a contact of another workspace holding the address is never merged into', async () => {
    const { headers } = await workspace();
    const elsewhere = await workspace();
    const theirs: ContactData = await holder(elsewhere.headers, 'Theirs', 'shared@example.com', {
      tier: 'Gold',
    });
    const id = await mapped(headers, ['Mine,shared@example.com,+1 555 0400,Silver,']);
    const [row] = await rows(id, headers);
    expect(row).toEqual({ line: 2, reason: null, contactId: null, outcome: 'create' });
    expect(await commit(id, headers)).toMatchObject({ createdCount: 1, mergedCount: 0 });
    const after = await contact(theirs.id, elsewhere.headers);
    expect(after.identities).toEqual(['shared@example.com']);
    expect(after.fieldValues).toEqual({ tier: 'Gold' });
    const mine = (await rows(id, headers))[0]!.contactId!;
    expect(mine).not.toBe(theirs.id);
    expect((await contact(mine, headers)).fieldValues).toEqual({ tier: 'Silver' });
  });
});

describe('a merge target erased while the commit runs', () => {
  test('the commit is refused contact_not_found, not an internal error, and the import stays mapped', async () => {
    const { headers, workspaceId } = await workspace();
    const ada = await holder(headers, 'Ada', 'ada@example.com');
    // Only a value to fill: the row adds no address.
    const id = await mapped(headers, ['Ada,ada@example.com,,Silver,']);
    expect((await rows(id, headers))[0]?.outcome).toBe('merge');

    // Another transaction holds the contact, as an erasure does, and erases it once the
    // commit, having judged its rows, waits for it.
    const sql = svc.db.database.sql;
    const eraser = await sql.reserve();
    try {
      await eraser`begin`;
      await eraser`select id from contacts where workspace_id = ${workspaceId} and id = ${ada.id} for update`;
      const committing = svc.graph(COMMIT, { id }, headers);
      for (;;) {
        const [waiting] = await sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`;
        if ((waiting?.n ?? 0) > 0) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      await eraser`delete from contacts where workspace_id = ${workspaceId} and id = ${ada.id}`;
      await eraser`commit`;
      const { body } = await committing;
      expect(body.errors?.[0]?.extensions).toMatchObject({
        code: 'NOT_FOUND',
        reason: 'contact_not_found',
      });
    } finally {
      eraser.release();
    }
    const { body } = await svc.graph(
      'query ($id: UUID!) { importJob(id: $id) { state } }',
      { id },
      headers,
    );
    expect(dataOf<{ state: string }>(body, 'importJob').state).toBe('mapped');
  });
});
