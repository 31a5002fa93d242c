// The fields plugin's values (SPEC 2.7): every kind's accepted and refused JSON, writing
// and clearing, repeater entries under their cap, the event each write records, and
// another workspace's contacts and entries.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  createContactVia,
  dataOf,
  expectReason,
  freshWorkspaceHeaders,
} from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import {
  ADD_ENTRY,
  DEFINE,
  DELETE_ENTRY,
  READ,
  UPDATE_ENTRY,
  WRITE,
  fieldInput,
  type FieldData,
} from './support.js';

const ENTRIES_MAX = 3;
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    plugins: {},
    env: { SVC_FIELDS_ENTRIES_MAX: String(ENTRIES_MAX) },
  });
  for (const input of [
    fieldInput('headline', 'text'),
    fieldInput('bio', 'long_text'),
    fieldInput('employees', 'number'),
    fieldInput('vip', 'boolean'),
    fieldInput('renewsOn', 'date'),
    fieldInput('lastSeenAt', 'date_time'),
    fieldInput('industry', 'select', { options: ['Retail', 'Energy'] }),
    fieldInput('tags', 'multi_select', { options: ['a', 'b', 'c'] }),
    fieldInput('website', 'url'),
    fieldInput('billingEmail', 'email'),
    fieldInput('mobile', 'phone'),
    fieldInput('budget', 'currency', { currency: 'EUR' }),
    fieldInput('budgetYen', 'currency', { currency: 'JPY' }),
    fieldInput('addresses', 'repeater', {
      subFields: [
        { name: 'street', label: 'Street', kind: 'text' },
        { name: 'kind', label: 'Kind', kind: 'select', options: ['Home', 'Work'] },
        { name: 'since', label: 'Since', kind: 'date' },
      ],
    }),
  ]) {
    dataOf<FieldData>((await svc.graph(DEFINE, { input })).body, 'defineField');
  }
});

afterAll(() => svc.stop());

async function contact(headers?: Record<string, string>): Promise<string> {
  return (await createContactVia(svc, 'Ada Lovelace', [], headers)).id;
}

async function write(contactId: string, values: unknown, headers?: Record<string, string>) {
  return (await svc.graph(WRITE, { contactId, values }, headers)).body;
}

async function read(contactId: string, name: string): Promise<unknown> {
  const { body } = await svc.graph(READ, { id: contactId, name });
  return dataOf<{ field: unknown }>(body, 'contact').field;
}

// Each kind: what it takes, and what it answers after.
const accepted: [string, unknown, unknown][] = [
  ['headline', '  Engineer  ', 'Engineer'],
  ['bio', 'Line one\nLine two', 'Line one\nLine two'],
  ['employees', 12, '12'],
  ['employees', '0012.500', '12.5'],
  ['employees', '-0', '0'],
  ['employees', '12345678901234567890.0123456789', '12345678901234567890.0123456789'],
  ['vip', true, true],
  ['vip', false, false],
  ['renewsOn', '2027-02-28', '2027-02-28'],
  ['lastSeenAt', '2026-11-24T10:30:00+02:00', '2026-11-24T08:30:00.000Z'],
  ['industry', 'Energy', 'Energy'],
  ['tags', ['c', 'a', 'c'], ['a', 'c']],
  ['website', 'https://Example.com', 'https://example.com/'],
  ['billingEmail', 'ada@example.com', 'ada@example.com'],
  ['mobile', '+44 (20) 7946-0000', '+44 (20) 7946-0000'],
  ['budget', 12.5, { amount: '12.50', currency: 'EUR' }],
  ['budget', { amount: '1000', currency: 'EUR' }, { amount: '1000.00', currency: 'EUR' }],
  ['budgetYen', '1500', { amount: '1500', currency: 'JPY' }],
];

const refused: [string, string, unknown][] = [
  ['headline', 'text', 'two\nlines'],
  ['headline', 'text', 'x'.repeat(1001)],
  ['headline', 'text', 12],
  ['employees', 'number', 'twelve'],
  ['employees', 'number', '1e3'],
  ['employees', 'number', '0.12345678901'],
  ['employees', 'number', true],
  ['vip', 'boolean', 'yes'],
  ['renewsOn', 'date', '2027-02-30'],
  ['renewsOn', 'date', '28/02/2027'],
  ['lastSeenAt', 'date_time', '2026-11-24T10:30:00'],
  ['industry', 'select', 'Mining'],
  ['tags', 'multi_select', ['a', 'z']],
  ['tags', 'multi_select', 'a'],
  ['website', 'url', 'ftp://example.com'],
  ['website', 'url', 'not a url'],
  ['billingEmail', 'email', 'ada@'],
  ['mobile', 'phone', 'call me'],
  ['budget', 'currency', '12.505'],
  ['budget', 'currency', { amount: '12', currency: 'USD' }],
  ['budgetYen', 'currency', '15.5'],
  ['addresses', 'repeater', [{ street: 'x' }]],
];

describe('writeContactFields and Contact.field', () => {
  test.each(accepted)('%s takes %j and answers %j', async (name, given, answered) => {
    const id = await contact();
    const body = await write(id, { [name]: given });
    expect(dataOf<{ id: string; name: string }>(body, 'writeContactFields')).toEqual({
      id,
      name: 'Ada Lovelace',
      fieldValues: { [name]: answered },
    });
    expect(await read(id, name)).toEqual(answered);
  });

  test.each(refused.filter(([name]) => name !== 'addresses'))(
    '%s (%s) refuses %j and keeps the stored value',
    async (name, kind, given) => {
      const id = await contact();
      const before = accepted.find(([n]) => n === name)!;
      dataOf(await write(id, { [name]: before[1] }), 'writeContactFields');
      expectReason(await write(id, { [name]: given }), 'VALIDATION', 'value_kind_mismatch', {
        field: name,
        kind,
      });
      expect(await read(id, name)).toEqual(before[2]);
    },
  );

  test('a refused value leaves every value of the write unwritten', async () => {
    const id = await contact();
    dataOf(await write(id, { headline: 'Before' }), 'writeContactFields');
    const body = await write(id, { headline: 'After', vip: 'maybe' });
    expectReason(body, 'VALIDATION', 'value_kind_mismatch', { field: 'vip', kind: 'boolean' });
    expect(await read(id, 'headline')).toBe('Before');
  });

  test('null, a blank string and an empty list clear a value', async () => {
    const id = await contact();
    dataOf(await write(id, { headline: 'x', tags: ['a'], vip: true }), 'writeContactFields');
    const cleared = await write(id, { headline: '  ', tags: [], vip: null });
    expect(dataOf<{ fieldValues: unknown }>(cleared, 'writeContactFields').fieldValues).toEqual({});
    expect(await read(id, 'vip')).toBeNull();
  });

  test('every string of a values object is held to the input caps before anything runs', async () => {
    const id = await contact();
    const tooLong = await write(id, { bio: 'x'.repeat(10_001) });
    expectReason(tooLong, 'VALIDATION', 'text_too_long', { max: 10_000 });
    expect(tooLong.errors?.[0]?.message).toBe('values.bio may be at most 10000 characters');
    expectReason(await write(id, { headline: 'a\u0000b' }), 'VALIDATION', 'text_invalid');
    expect(
      dataOf<{ fieldValues: unknown }>(
        await write(id, { bio: 'y'.repeat(10_000) }),
        'writeContactFields',
      ).fieldValues,
    ).toEqual({ bio: 'y'.repeat(10_000) });
  });

  test('values must be an object of names', async () => {
    const id = await contact();
    for (const values of [['headline'], 'headline', 12, true]) {
      expectReason(await write(id, values), 'VALIDATION', 'values_not_an_object');
    }
  });

  test('unknown names are refused and named', async () => {
    const id = await contact();
    expectReason(
      await write(id, { headline: 'x', colour: 'red', size: 1 }),
      'VALIDATION',
      'field_unknown',
      {
        fields: ['colour', 'size'],
      },
    );
    const { body } = await svc.graph(READ, { id, name: 'colour' });
    expect(body.errors?.[0]?.extensions).toEqual(
      expect.objectContaining({ reason: 'field_unknown', meta: { fields: ['colour'] } }),
    );
    expect(body.errors?.[0]?.path).toEqual(['contact', 'field']);
  });

  test('a repeater takes entries only', async () => {
    const id = await contact();
    expectReason(
      await write(id, { addresses: [{ street: 'x' }] }),
      'VALIDATION',
      'field_repeater_entries_only',
      {
        field: 'addresses',
      },
    );
  });

  test("another workspace's contact is contact_not_found, as a made-up one", async () => {
    const theirs = await freshWorkspaceHeaders(svc);
    const foreign = await contact(theirs.headers);
    for (const id of [foreign, '00000000-0000-4000-8000-000000000000']) {
      expectReason(await write(id, { headline: 'x' }), 'NOT_FOUND', 'contact_not_found');
    }
  });

  test('records contact.fields_changed naming the contact and the fields, in the write', async () => {
    const id = await contact();
    dataOf(await write(id, { headline: 'x', vip: null }), 'writeContactFields');
    const rows = await svc.db.database.sql`
      select name, subject_id, actor_user_id, data from events
      where workspace_id = ${svc.workspace.id} and subject_id = ${id} and name = 'contact.fields_changed'`;
    expect(rows).toEqual([
      {
        name: 'contact.fields_changed',
        subject_id: id,
        actor_user_id: svc.admin.id,
        data: { contactId: id, fields: ['headline', 'vip'] },
      },
    ]);
  });

  test('an archived field keeps its values and shows them again once taken back', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const field = dataOf<FieldData>(
      (await svc.graph(DEFINE, { input: fieldInput('tier', 'text') }, headers)).body,
      'defineField',
    );
    const id = await contact(headers);
    dataOf(await write(id, { tier: 'Gold' }, headers), 'writeContactFields');
    await svc.graph(
      `mutation ($id: UUID!) { archiveField(id: $id) { id } }`,
      { id: field.id },
      headers,
    );
    const hidden = await svc.graph(READ, { id, name: 'tier' }, headers);
    expect(hidden.body.errors?.[0]?.extensions.reason).toBe('field_unknown');
    expectReason(await write(id, { tier: 'Silver' }, headers), 'VALIDATION', 'field_unknown', {
      fields: ['tier'],
    });
    dataOf(
      (await svc.graph(DEFINE, { input: fieldInput('tier', 'text') }, headers)).body,
      'defineField',
    );
    const back = await svc.graph(READ, { id, name: 'tier' }, headers);
    expect(dataOf<{ field: unknown }>(back.body, 'contact').field).toBe('Gold');
  });
});

interface EntryData {
  id: string;
  contactId: string;
  field: string;
  values: Record<string, unknown>;
}

async function addEntry(
  contactId: string,
  values: unknown,
  field = 'addresses',
  headers?: Record<string, string>,
) {
  return (await svc.graph(ADD_ENTRY, { contactId, field, values }, headers)).body;
}

describe('repeater entries', () => {
  test('are added, changed and deleted one at a time, each with its own id', async () => {
    const id = await contact();
    const first = dataOf<EntryData>(
      await addEntry(id, { street: '1 Main St', kind: 'Home' }),
      'addContactFieldEntry',
    );
    expect(first).toEqual({
      id: expect.any(String),
      contactId: id,
      field: 'addresses',
      values: { id: first.id, street: '1 Main St', kind: 'Home' },
    });
    const second = dataOf<EntryData>(
      await addEntry(id, { street: '2 Side St' }),
      'addContactFieldEntry',
    );

    const { body: updated } = await svc.graph(UPDATE_ENTRY, {
      contactId: id,
      field: 'addresses',
      entryId: first.id,
      values: { kind: null, since: '2020-01-01' },
    });
    expect(dataOf<EntryData>(updated, 'updateContactFieldEntry').values).toEqual({
      id: first.id,
      street: '1 Main St',
      since: '2020-01-01',
    });
    expect(await read(id, 'addresses')).toEqual([
      { id: first.id, street: '1 Main St', since: '2020-01-01' },
      { id: second.id, street: '2 Side St' },
    ]);

    const { body: deleted } = await svc.graph(DELETE_ENTRY, {
      contactId: id,
      field: 'addresses',
      entryId: first.id,
    });
    expect(dataOf(deleted, 'deleteContactFieldEntry')).toBe(first.id);
    expect(await read(id, 'addresses')).toEqual([{ id: second.id, street: '2 Side St' }]);
  });

  test('a field that keeps no entries is field_not_a_repeater; an unknown one field_unknown', async () => {
    const id = await contact();
    expectReason(
      await addEntry(id, { street: 'x' }, 'headline'),
      'VALIDATION',
      'field_not_a_repeater',
      {
        field: 'headline',
      },
    );
    expectReason(await addEntry(id, { street: 'x' }, 'nowhere'), 'VALIDATION', 'field_unknown', {
      fields: ['nowhere'],
    });
  });

  test('an entry whose every cell is blank is field_entry_empty; cells are judged by their kind', async () => {
    const id = await contact();
    expectReason(
      await addEntry(id, { street: '  ', kind: null }),
      'VALIDATION',
      'field_entry_empty',
    );
    expectReason(await addEntry(id, {}), 'VALIDATION', 'field_entry_empty');
    expectReason(await addEntry(id, { kind: 'Moon' }), 'VALIDATION', 'value_kind_mismatch', {
      field: 'addresses.kind',
      kind: 'select',
    });
    expectReason(await addEntry(id, { floor: 2 }), 'VALIDATION', 'field_unknown', {
      fields: ['floor'],
    });
    const entry = dataOf<EntryData>(await addEntry(id, { street: 'x' }), 'addContactFieldEntry');
    const { body } = await svc.graph(UPDATE_ENTRY, {
      contactId: id,
      field: 'addresses',
      entryId: entry.id,
      values: { street: null },
    });
    expectReason(body, 'VALIDATION', 'field_entry_empty');
  });

  test("another contact's, another workspace's or a made-up entry is field_entry_not_found", async () => {
    const id = await contact();
    const other = await contact();
    const entry = dataOf<EntryData>(await addEntry(other, { street: 'x' }), 'addContactFieldEntry');
    const theirs = await freshWorkspaceHeaders(svc);
    await svc.graph(
      DEFINE,
      {
        input: fieldInput('addresses', 'repeater', {
          subFields: [{ name: 'street', label: 'Street', kind: 'text' }],
        }),
      },
      theirs.headers,
    );
    const foreignContact = await contact(theirs.headers);
    const foreign = dataOf<EntryData>(
      await addEntry(foreignContact, { street: 'y' }, 'addresses', theirs.headers),
      'addContactFieldEntry',
    );
    for (const [contactId, entryId] of [
      [id, entry.id],
      [id, foreign.id],
      [foreignContact, foreign.id],
      [id, '00000000-0000-4000-8000-000000000000'],
    ]) {
      const update = await svc.graph(UPDATE_ENTRY, {
        contactId,
        field: 'addresses',
        entryId,
        values: { street: 'z' },
      });
      expectReason(update.body, 'NOT_FOUND', 'field_entry_not_found');
      const remove = await svc.graph(DELETE_ENTRY, { contactId, field: 'addresses', entryId });
      expectReason(remove.body, 'NOT_FOUND', 'field_entry_not_found');
    }
    expectReason(await addEntry(foreignContact, { street: 'x' }), 'NOT_FOUND', 'contact_not_found');
  });

  test('a repeater holds at most SVC_FIELDS_ENTRIES_MAX entries, exactly, under concurrent adds', async () => {
    const id = await contact();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => addEntry(id, { street: `${i} Main St` })),
    );
    expect(answers.filter((body) => !body.errors)).toHaveLength(ENTRIES_MAX);
    for (const body of answers.filter((b) => b.errors)) {
      expectReason(body, 'CONFLICT', 'field_entries_full', { max: ENTRIES_MAX });
    }
    expect(await read(id, 'addresses')).toHaveLength(ENTRIES_MAX);
  });

  test('every entry write records contact.fields_changed', async () => {
    const id = await contact();
    const entry = dataOf<EntryData>(await addEntry(id, { street: 'x' }), 'addContactFieldEntry');
    await svc.graph(DELETE_ENTRY, { contactId: id, field: 'addresses', entryId: entry.id });
    const rows = await svc.db.database.sql`
      select data from events where workspace_id = ${svc.workspace.id}
      and subject_id = ${id} and name = 'contact.fields_changed' order by at`;
    expect(rows.map((row) => row.data)).toEqual([
      { contactId: id, fields: ['addresses'] },
      { contactId: id, fields: ['addresses'] },
    ]);
  });
});
