// mergeContacts (issue 28, docs/contacts.md): the sources' identities, task links, field
// values and entries, conversations, notes and import links move to the target, then the
// sources are erased; one transaction, and two merges racing over the same contacts leave
// one consistent result.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dataOf, freshWorkspaceHeaders } from '../support/contacts.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
  const define = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }`;
  for (const input of [
    { name: 'tier', label: 'Tier', kind: 'text' },
    { name: 'city', label: 'City', kind: 'text' },
    {
      name: 'visits',
      label: 'Visits',
      kind: 'repeater',
      subFields: [{ name: 'note', label: 'Note', kind: 'text' }],
    },
  ]) {
    dataOf((await svc.graph(define, { input })).body, 'defineField');
  }
});

afterAll(() => svc.stop());

const MERGE = `mutation ($targetId: UUID!, $sourceIds: [UUID!]!) {
  mergeContacts(targetId: $targetId, sourceIds: $sourceIds) {
    contact { id name identities { identifier } tier: field(name: "tier") city: field(name: "city")
      visits: field(name: "visits") tasks { id } }
    mergedIds
  }
}`;

let made = 0;
async function contact(name: string, email = `c${++made}-${Date.now()}@merge.example`) {
  const { body } = await svc.graph(
    `mutation ($name: String!, $email: String!) { createContact(input: { name: $name,
      identities: [{ channel: "email", identifier: $email }] }) { id } }`,
    { name, email },
  );
  return dataOf<{ id: string }>(body, 'createContact').id;
}

async function run<T>(query: string, variables: Record<string, unknown>, field: string) {
  return dataOf<T>((await svc.graph(query, variables)).body, field);
}

const writeFields = (id: string, values: Record<string, unknown>) =>
  run(
    'mutation ($id: UUID!, $values: JSON!) { writeContactFields(contactId: $id, values: $values) { id } }',
    { id, values },
    'writeContactFields',
  );
const addVisit = (id: string, note: string) =>
  run(
    `mutation ($id: UUID!, $note: String!) { addContactFieldEntry(contactId: $id, field: "visits",
      values: { note: $note }) { id } }`,
    { id, note },
    'addContactFieldEntry',
  );

interface Merged {
  contact: {
    id: string;
    identities: { identifier: string }[];
    tier: unknown;
    city: unknown;
    visits: { note: string }[];
    tasks: { id: string }[];
  };
  mergedIds: string[];
}

describe('mergeContacts', () => {
  test('moves identities, tasks, values (the target’s win), entries (appended), notes and import links, then erases the sources', async () => {
    const target = await contact('Ann Target', 'ann@merge.example');
    const first = await contact('Ann One', 'ann.one@merge.example');
    const second = await contact('Ann Two', 'ann.two@merge.example');
    await writeFields(target, { tier: 'gold' });
    await writeFields(first, { tier: 'silver', city: 'Lisbon' });
    await writeFields(second, { city: 'Porto' });
    await addVisit(target, 't1');
    await addVisit(second, 's2-a');
    await addVisit(first, 's1-a');
    await addVisit(second, 's2-b');
    const { task } = await run<{ task: { id: string } }>(
      'mutation ($id: UUID) { createTask(input: { title: "Follow up", contactId: $id }) { task { id } } }',
      { id: second },
      'createTask',
    );
    const note = await run<{ id: string }>(
      'mutation ($id: UUID!) { noteCreate(contactId: $id, body: "prefers mornings") { id } }',
      { id: first },
      'noteCreate',
    );
    const { sql } = svc.db.database;
    const [job] = await sql<{ id: string }[]>`
      insert into imports (workspace_id, file_name, format, state, columns, row_count)
      values (${svc.workspace.id}, 'people.csv', 'csv', 'committed', '["name"]'::jsonb, 1)
      returning id`;
    await sql`
      insert into import_rows (workspace_id, import_id, line, cells, reason, contact_id)
      values (${svc.workspace.id}, ${job!.id}, 2, '["Ann One"]'::jsonb,
        '{"code": "identity_taken_by", "meta": {"ownerName": "Ann One"}}'::jsonb, ${first})`;

    const merged = await run<Merged>(
      MERGE,
      { targetId: target, sourceIds: [first, second, first] },
      'mergeContacts',
    );

    expect(merged.mergedIds).toEqual([first, second]);
    expect(merged.contact.identities.map((i) => i.identifier).sort()).toEqual([
      'ann.one@merge.example',
      'ann.two@merge.example',
      'ann@merge.example',
    ]);
    // The target's own tier wins; city comes from the first source listed that has one.
    expect(merged.contact.tier).toBe('gold');
    expect(merged.contact.city).toBe('Lisbon');
    expect(merged.contact.visits.map((v) => v.note)).toEqual(['t1', 's1-a', 's2-a', 's2-b']);
    expect(merged.contact.tasks).toEqual([{ id: task.id }]);
    const [moved] = await sql<{ contact_id: string }[]>`
      select contact_id from notes where id = ${note.id}`;
    expect(moved?.contact_id).toBe(target);
    const [row] = await sql<{ contact_id: string; reason: unknown }[]>`
      select contact_id, reason from import_rows where import_id = ${job!.id}`;
    expect(row).toEqual({
      contact_id: target,
      reason: { code: 'identity_taken_by', meta: { ownerName: 'Ann Target' } },
    });
    for (const id of [first, second]) {
      const gone = await svc.graph('query ($id: UUID!) { contact(id: $id) { id } }', { id });
      expect(gone.body.errors?.[0]?.extensions.reason).toBe('contact_not_found');
    }
    const events = await sql<{ name: string; subject_id: string; data: unknown }[]>`
      select name, subject_id, data from events
      where name in ('contact.merged', 'contact.deleted') and subject_id in ${sql([target, first, second])}
      order by at`;
    expect(events).toEqual([
      {
        name: 'contact.deleted',
        subject_id: first,
        data: { contactId: first, mergedInto: target },
      },
      {
        name: 'contact.deleted',
        subject_id: second,
        data: { contactId: second, mergedInto: target },
      },
      {
        name: 'contact.merged',
        subject_id: target,
        data: { contactId: target, sourceIds: [first, second] },
      },
    ]);
  });

  test('refuses the target among the sources, more sources than the cap, and identities past the cap; nothing moves', async () => {
    const target = await contact('Ben');
    const expectReason = async (sourceIds: string[], reason: string) => {
      const { body } = await svc.graph(MERGE, { targetId: target, sourceIds });
      expect(body.errors?.[0]?.extensions.reason).toBe(reason);
    };
    await expectReason([target], 'merge_target_in_sources');
    const many = Array.from({ length: 21 }, () => crypto.randomUUID());
    await expectReason(many, 'list_too_long');
    const crowded = await contact('Ben Crowded');
    for (let i = 0; i < 49; i += 1) {
      await run(
        `mutation ($id: UUID!, $email: String!) { addContactIdentity(contactId: $id,
          identity: { channel: "email", identifier: $email }) { identity { id } } }`,
        { id: crowded, email: `ben${i}-${Date.now()}@crowded.example` },
        'addContactIdentity',
      );
    }
    await expectReason([crowded], 'identities_full');
    const still = await run<{ identities: unknown[] }>(
      'query ($id: UUID!) { contact(id: $id) { identities { id } } }',
      { id: crowded },
      'contact',
    );
    expect(still.identities).toHaveLength(50);
  });

  test('two merges racing over the same contacts leave one consistent result', async () => {
    const a = await contact('Cy A');
    const b = await contact('Cy B');
    const c = await contact('Cy C');
    const { sql } = svc.db.database;
    // Both merges are made to wait on a lock this test holds on every one of the
    // contacts, then let go together.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const holder = sql.begin(async (tx) => {
      await tx`select id from contacts where id in ${tx([a, b, c])} for update`;
      holding();
      await released;
    });
    await held;
    const one = svc.graph(MERGE, { targetId: a, sourceIds: [b, c] });
    const two = svc.graph(MERGE, { targetId: c, sourceIds: [b, a] });
    await waitersOn(svc, 2);
    release();
    await holder;
    const answers = await Promise.all([one, two]);
    const reasons = answers.map(({ body }) =>
      body.errors ? (body.errors[0]?.extensions.reason ?? body.errors[0]?.extensions.code) : 'ok',
    );
    expect(reasons.sort()).toEqual(['contact_not_found', 'ok']);
    const left = await sql<{ id: string; identities: number }[]>`
      select c.id, (select count(*)::int from contact_identities i where i.contact_id = c.id)
        as identities
      from contacts c where c.id in ${sql([a, b, c])}`;
    expect(left).toHaveLength(1);
    expect(left[0]?.identities).toBe(3);
  });

  test('a contact of another workspace, as the target or a source, is answered as an unknown id', async () => {
    const other = await freshWorkspaceHeaders(svc);
    const foreign = dataOf<{ id: string }>(
      (
        await svc.graph(
          'mutation { createContact(input: { name: "Bea" }) { id } }',
          {},
          other.headers,
        )
      ).body,
      'createContact',
    ).id;
    const mine = await contact('Dee');
    await expectAnsweredAsUnknown(
      svc,
      'mergeContacts(targetId)',
      MERGE,
      (id) => ({ targetId: id, sourceIds: [mine] }),
      foreign,
    );
    await expectAnsweredAsUnknown(
      svc,
      'mergeContacts(sourceIds)',
      MERGE,
      (id) => ({ targetId: mine, sourceIds: [id] }),
      foreign,
    );
    const still = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { id } }',
      { id: foreign },
      other.headers,
    );
    expect(still.body.data).toEqual({ contact: { id: foreign } });
  });
});

/** Waits until `count` statements of this database wait for a lock. */
async function waitersOn(service: TestService, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [row] = await service.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    if ((row?.n ?? 0) >= count) return;
  }
  throw new Error(`fewer than ${count} statements waited for a lock`);
}
