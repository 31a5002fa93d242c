// What a mapping prepares of each row for the commit (its plan), and a commit trusting a
// plan only while what it rests on holds: a holder renamed or gone, an address freed, a
// merge target grown since the mapping, a contact erased, each has every row judged again.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  ADD_IDENTITY,
  createContactVia,
  dataOf,
  freshWorkspaceHeaders,
  RENAME_CONTACT,
} from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { uploadFile } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

type Headers = Record<string, string>;

const MAP = `mutation ($id: UUID!, $mapping: [ImportColumnInput!]!, $existing: ImporterExistingContacts) {
  importSetMapping(id: $id, mapping: $mapping, existingContacts: $existing) { state }
}`;
const COMMIT = `mutation ($id: UUID!) {
  importCommit(id: $id) { state createdCount mergedCount skippedCount }
}`;
const ROWS = `query ($id: UUID!) {
  importJob(id: $id) { rows { line reason { code meta } contactId outcome } }
}`;
const DEFINE = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }`;
const MAPPING = [
  { column: 0, target: 'name' },
  { column: 1, target: 'identity:email' },
  { column: 2, target: 'identity:phone' },
  { column: 3, target: 'field:tier' },
];

/** A fresh workspace with a `tier` (select) field: its admin's headers and the field's id. */
async function workspace() {
  const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
  const input = { name: 'tier', label: 'Tier', kind: 'select', options: ['Gold', 'Silver'] };
  const field = dataOf<{ id: string }>(
    (await svc.graph(DEFINE, { input }, headers)).body,
    'defineField',
  );
  return { headers, workspaceId, tierId: field.id };
}

/** Stages `lines` under a header and maps them (`existing`: SKIP or MERGE); the import's id. */
async function mapped(headers: Headers, lines: string[], existing = 'SKIP'): Promise<string> {
  const csv = ['name,email,phone,tier', ...lines].join('\n');
  const { id } = dataOf<{ id: string }>(
    (await uploadFile(svc, csv, 'c.csv', headers)).body,
    'importUpload',
  );
  dataOf(
    (await svc.graph(MAP, { id, mapping: MAPPING, existing }, headers)).body,
    'importSetMapping',
  );
  return id;
}

async function commit(id: string, headers: Headers) {
  return dataOf<Record<string, unknown>>(
    (await svc.graph(COMMIT, { id }, headers)).body,
    'importCommit',
  );
}

async function rows(id: string, headers: Headers) {
  const { body } = await svc.graph(ROWS, { id }, headers);
  return dataOf<{
    rows: {
      line: number;
      reason: { code: string; meta: Record<string, unknown> } | null;
      contactId: string | null;
      outcome: string;
    }[];
  }>(body, 'importJob').rows;
}

/** The stored plans of an import's rows, in file order, and what they were judged with. */
async function plans(workspaceId: string, id: string) {
  const sql = svc.db.database.sql;
  const stored = await sql<{ plan: unknown }[]>`
    select plan from import_rows where workspace_id = ${workspaceId} and import_id = ${id}
    order by line`;
  const [job] = await sql<{ plannedWith: string | null }[]>`
    select planned_with as "plannedWith" from imports where workspace_id = ${workspaceId} and id = ${id}`;
  return { plans: stored.map((row) => row.plan), plannedWith: job!.plannedWith };
}

const holderOf = (headers: Headers, name: string, email: string) =>
  createContactVia(svc, name, [{ channel: 'email', identifier: email }], headers);

describe('the mapping', () => {
  test('stores with each row what the commit writes of it, and what its judgement rests on', async () => {
    const { headers, workspaceId, tierId } = await workspace();
    const held = await holderOf(headers, 'Bea Held', 'bea@example.com');
    const id = await mapped(headers, [
      'Ada,Ada@Example.com,+44 20 7946 0001,Gold', // 2: creates Ada
      'Bea,bea@example.com,,', // 3: held by Bea Held
      ',cy@example.com,,', // 4: no name
    ]);
    const { plans: stored, plannedWith } = await plans(workspaceId, id);
    expect(stored).toEqual([
      {
        name: 'Ada',
        addresses: [
          {
            channel: 'email',
            identifier: 'Ada@Example.com',
            identifierKey: 'ada@example.com',
            displayName: null,
          },
          {
            channel: 'phone',
            identifier: '+44 20 7946 0001',
            identifierKey: '+442079460001',
            displayName: null,
          },
        ],
        values: { [tierId]: 'Gold' },
      },
      {
        addresses: [
          {
            channel: 'email',
            identifier: 'bea@example.com',
            identifierKey: 'bea@example.com',
            displayName: null,
            holder: held.id,
            holderName: 'Bea Held',
          },
        ],
      },
      null,
    ]);
    // The fields it judged by: their ids and settings, not their labels.
    expect(JSON.parse(plannedWith!)).toEqual([
      [tierId, 'tier', 'select', ['Gold', 'Silver'], null],
    ]);
  });
});

describe('a commit after the workspace changed', () => {
  test('a holder renamed since the mapping is named as it is now', async () => {
    const { headers } = await workspace();
    const held = await holderOf(headers, 'Bea Held', 'bea@example.com');
    const id = await mapped(headers, ['Bea,bea@example.com,,', 'Ada,ada@example.com,,']);
    dataOf(
      (await svc.graph(RENAME_CONTACT, { id: held.id, name: 'Bea Renamed' }, headers)).body,
      'renameContact',
    );
    expect(await commit(id, headers)).toMatchObject({ createdCount: 1, skippedCount: 1 });
    expect((await rows(id, headers))[0]).toMatchObject({
      reason: { code: 'identity_taken_by', meta: { ownerName: 'Bea Renamed' } },
      contactId: held.id,
    });
  });

  test('an address its holder let go of since the mapping imports the row', async () => {
    const { headers } = await workspace();
    const held = await createContactVia(
      svc,
      'Bea Held',
      [
        { channel: 'email', identifier: 'bea@example.com' },
        { channel: 'phone', identifier: '+44 20 7946 0009' },
      ],
      headers,
    );
    const id = await mapped(headers, ['Bea,bea@example.com,,Silver']);
    expect((await rows(id, headers))[0]!.outcome).toBe('skip');
    const email = held.identities.find((identity) => identity.channel === 'email')!;
    dataOf(
      (
        await svc.graph(
          'mutation ($id: UUID!) { deleteContactIdentity(id: $id) { identity { id } } }',
          { id: email.id },
          headers,
        )
      ).body,
      'deleteContactIdentity',
    );
    expect(await commit(id, headers)).toMatchObject({ createdCount: 1, skippedCount: 0 });
    const [row] = await rows(id, headers);
    expect(row).toMatchObject({ reason: null, outcome: 'created' });
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { name identities { identifier } fieldValues } }',
      { id: row!.contactId },
      headers,
    );
    expect(dataOf(body, 'contact')).toEqual({
      name: 'Bea',
      identities: [{ identifier: 'bea@example.com' }],
      fieldValues: { tier: 'Silver' },
    });
  });

  test('identities a merge target gained since the mapping count against its cap', async () => {
    const { headers } = await workspace();
    const target = await holderOf(headers, 'Ada', 'ada@example.com');
    // The row would add a phone: 49 identities after it with the mapping's count.
    for (let i = 0; i < 47; i += 1) {
      const identity = { channel: 'phone', identifier: `+1 555 ${String(1000 + i)}` };
      dataOf(
        (await svc.graph(ADD_IDENTITY, { contactId: target.id, identity }, headers)).body,
        'addContactIdentity',
      );
    }
    const id = await mapped(headers, ['Ada,ada@example.com,+44 20 7946 0003,'], 'MERGE');
    expect((await rows(id, headers))[0]!.outcome).toBe('merge');
    for (const identifier of ['+1 555 2000', '+1 555 2001']) {
      dataOf(
        (
          await svc.graph(
            ADD_IDENTITY,
            { contactId: target.id, identity: { channel: 'phone', identifier } },
            headers,
          )
        ).body,
        'addContactIdentity',
      );
    }
    expect(await commit(id, headers)).toMatchObject({ mergedCount: 0, skippedCount: 1 });
    expect((await rows(id, headers))[0]).toMatchObject({
      reason: { code: 'identities_full', meta: { max: 50 } },
      contactId: target.id,
    });
  });

  test('an erased contact’s row loses its plan, and the commit judges every row again', async () => {
    const { headers, workspaceId } = await workspace();
    const held = await holderOf(headers, 'Bea Held', 'bea@example.com');
    const id = await mapped(headers, ['Bea,bea@example.com,,', 'Ada,ada@example.com,,']);
    dataOf(
      (
        await svc.graph(
          'mutation ($id: UUID!) { deleteContact(id: $id) { id } }',
          { id: held.id },
          headers,
        )
      ).body,
      'deleteContact',
    );
    const { plans: stored, plannedWith } = await plans(workspaceId, id);
    expect([stored[0], plannedWith]).toEqual([null, null]);
    // The erased contact's row holds blanked cells now: judged again, it is incomplete.
    expect(await commit(id, headers)).toMatchObject({ createdCount: 1, skippedCount: 1 });
    expect((await rows(id, headers)).map((row) => [row.reason?.code ?? null, row.outcome])).toEqual(
      [
        ['row_incomplete', 'skipped'],
        [null, 'created'],
      ],
    );
  });
});

describe('hostile cells', () => {
  test('a name of tabs, backslashes, quotes and astral characters is written as judged', async () => {
    const { headers } = await workspace();
    const name = 'Zoë\t"Q" \\N back\\slash 𝄞 O’Neil';
    const csv = `name,email,phone,tier\n"${name.replace(/"/g, '""')}",z@example.com,,Gold\n`;
    const { id } = dataOf<{ id: string }>(
      (await uploadFile(svc, csv, 'c.csv', headers)).body,
      'importUpload',
    );
    dataOf(
      (await svc.graph(MAP, { id, mapping: MAPPING, existing: 'SKIP' }, headers)).body,
      'importSetMapping',
    );
    expect(await commit(id, headers)).toMatchObject({ createdCount: 1 });
    const [row] = await rows(id, headers);
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { name fieldValues } }',
      { id: row!.contactId },
      headers,
    );
    expect(dataOf(body, 'contact')).toEqual({ name, fieldValues: { tier: 'Gold' } });
  });
});
