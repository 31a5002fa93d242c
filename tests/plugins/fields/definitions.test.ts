// The fields plugin's definitions (SPEC 2.7): every rule and its reason, taking an archived
// field back, ordering, the reserved names, and another workspace's ids.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectReason, dataOf, freshWorkspaceHeaders } from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { DEFINE, FIELDS, fieldInput, type FieldData } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

async function define(input: Record<string, unknown>, headers?: Record<string, string>) {
  return (await svc.graph(DEFINE, { input }, headers)).body;
}

async function defined(input: Record<string, unknown>, headers?: Record<string, string>) {
  return dataOf<FieldData>(await define(input, headers), 'defineField');
}

const ARCHIVE = `mutation ($id: UUID!) { archiveField(id: $id) { id name archived archivedAt } }`;
const ORDER = `mutation ($ids: [UUID!]!) { orderFields(ids: $ids) { name position } }`;

describe('defineField', () => {
  test('adds a field at the end of the list and answers it', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    await defined(fieldInput('industry', 'select', { options: ['Retail', 'Energy'] }), headers);
    const field = await defined(fieldInput('renewsOn', 'date'), headers);
    expect(field).toEqual({
      id: expect.any(String),
      name: 'renewsOn',
      label: 'Renews on',
      kind: 'date',
      options: null,
      currency: null,
      subFields: null,
      position: 1,
      archived: false,
    });
    const { body } = await svc.graph(FIELDS, {}, headers);
    expect(dataOf<FieldData[]>(body, 'fields').map((f) => f.name)).toEqual([
      'industry',
      'renewsOn',
    ]);
  });

  // SPEC 2.7, row by row.
  test.each([
    ['field_name_malformed', fieldInput('Industry', 'text')],
    ['field_name_malformed', fieldInput('first_name', 'text')],
    ['field_name_malformed', fieldInput('2fa', 'text')],
    ['field_label_required', { ...fieldInput('industry', 'text'), label: '   ' }],
    ['field_label_too_long', { ...fieldInput('industry', 'text'), label: 'x'.repeat(101) }],
    ['field_kind_unknown', fieldInput('industry', 'colour')],
    ['field_name_reserved', fieldInput('name', 'text')],
    ['field_name_reserved', fieldInput('createdAt', 'date_time')],
    ['field_name_reserved', fieldInput('identities', 'text')],
    ['field_sub_fields_required', fieldInput('addresses', 'repeater')],
    ['field_sub_fields_required', fieldInput('addresses', 'repeater', { subFields: [] })],
    [
      'field_sub_fields_unexpected',
      fieldInput('city', 'text', { subFields: [{ name: 'a', label: 'A', kind: 'text' }] }),
    ],
    [
      'field_sub_field_nested',
      fieldInput('addresses', 'repeater', {
        subFields: [{ name: 'inner', label: 'Inner', kind: 'repeater' }],
      }),
    ],
    [
      'field_sub_field_name_invalid',
      fieldInput('addresses', 'repeater', {
        subFields: [{ name: 'Street', label: 'Street', kind: 'text' }],
      }),
    ],
    [
      'field_sub_field_name_taken',
      fieldInput('addresses', 'repeater', {
        subFields: [
          { name: 'street', label: 'Street', kind: 'text' },
          { name: 'street', label: 'Street again', kind: 'text' },
        ],
      }),
    ],
    [
      'field_sub_field_name_reserved',
      fieldInput('addresses', 'repeater', {
        subFields: [{ name: 'id', label: 'Id', kind: 'text' }],
      }),
    ],
    ['field_options_required', fieldInput('industry', 'select')],
    ['field_option_invalid', fieldInput('industry', 'select', { options: ['A', 'A'] })],
    ['field_option_invalid', fieldInput('industry', 'multi_select', { options: [' '] })],
    ['field_currency_invalid', fieldInput('budget', 'currency', { currency: 'XYZ' })],
    ['field_currency_invalid', fieldInput('budget', 'currency')],
    ['field_setting_unexpected', fieldInput('city', 'text', { options: ['A'] })],
    ['field_setting_unexpected', fieldInput('city', 'number', { currency: 'EUR' })],
  ])('refuses with %s', async (reason, input) => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const body = await define(input, headers);
    expect(body.errors?.[0]?.extensions).toEqual(
      expect.objectContaining({ code: 'VALIDATION', reason }),
    );
    expect((await svc.graph(FIELDS, {}, headers)).body.data).toEqual({ fields: [] });
  });

  test('a label past its cap is refused before anything runs, with the plugin reason', async () => {
    const body = await define({ ...fieldInput('industry', 'text'), label: 'y'.repeat(500) });
    expectReason(body, 'VALIDATION', 'field_label_too_long', { max: 100 });
  });

  test('another live field holding the name is field_name_taken', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    await defined(fieldInput('industry', 'text'), headers);
    expectReason(
      await define(fieldInput('industry', 'number'), headers),
      'CONFLICT',
      'field_name_taken',
    );
  });

  test('two workspaces may each hold a field of the same name', async () => {
    const a = await freshWorkspaceHeaders(svc);
    const b = await freshWorkspaceHeaders(svc);
    await defined(fieldInput('industry', 'text'), a.headers);
    expect((await defined(fieldInput('industry', 'number'), b.headers)).kind).toBe('number');
  });

  test('a repeater keeps its sub fields with their kinds and options', async () => {
    const field = await defined(
      fieldInput('addresses', 'repeater', {
        subFields: [
          { name: 'street', label: 'Street', kind: 'text' },
          { name: 'kind', label: 'Kind', kind: 'select', options: ['Home', 'Work'] },
        ],
      }),
    );
    expect(field.subFields).toEqual([
      { name: 'street', label: 'Street', kind: 'text', options: null, currency: null },
      { name: 'kind', label: 'Kind', kind: 'select', options: ['Home', 'Work'], currency: null },
    ]);
  });
});

describe('archiveField and taking a field back', () => {
  test('an archived field leaves the list, keeps its name pinned, and comes back with the same kind', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const field = await defined(fieldInput('industry', 'text'), headers);
    const archived = dataOf<{ archived: boolean; archivedAt: string }>(
      (await svc.graph(ARCHIVE, { id: field.id }, headers)).body,
      'archiveField',
    );
    expect(archived).toEqual(
      expect.objectContaining({ archived: true, archivedAt: expect.any(String) }),
    );
    expect((await svc.graph(FIELDS, {}, headers)).body.data).toEqual({ fields: [] });
    const all = await svc.graph(`{ fields(includeArchived: true) { name archived } }`, {}, headers);
    expect(all.body.data).toEqual({ fields: [{ name: 'industry', archived: true }] });

    expectReason(
      await define(fieldInput('industry', 'number'), headers),
      'CONFLICT',
      'field_kind_locked',
    );
    const back = await defined({ ...fieldInput('industry', 'text'), label: 'Sector' }, headers);
    expect(back).toEqual(
      expect.objectContaining({ id: field.id, label: 'Sector', archived: false }),
    );
  });

  test("a repeater's sub fields are pinned too", async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const sub = { name: 'street', label: 'Street', kind: 'text' };
    const field = await defined(fieldInput('addresses', 'repeater', { subFields: [sub] }), headers);
    await svc.graph(ARCHIVE, { id: field.id }, headers);
    const other = { subFields: [{ ...sub, kind: 'long_text' }] };
    expectReason(
      await define(fieldInput('addresses', 'repeater', other), headers),
      'CONFLICT',
      'field_kind_locked',
    );
    const relabelled = { subFields: [{ ...sub, label: 'Street and number' }] };
    expect((await defined(fieldInput('addresses', 'repeater', relabelled), headers)).id).toBe(
      field.id,
    );
  });

  test('an unknown, archived or other workspace id is field_not_found', async () => {
    const mine = await freshWorkspaceHeaders(svc);
    const theirs = await freshWorkspaceHeaders(svc);
    const field = await defined(fieldInput('industry', 'text'), mine.headers);
    const other = await defined(fieldInput('industry', 'text'), theirs.headers);
    await svc.graph(ARCHIVE, { id: field.id }, mine.headers);
    for (const id of [field.id, other.id, '00000000-0000-4000-8000-000000000000']) {
      const { body } = await svc.graph(ARCHIVE, { id }, mine.headers);
      expectReason(body, 'NOT_FOUND', 'field_not_found');
    }
    const stillLive = await svc.graph(FIELDS, {}, theirs.headers);
    expect(dataOf<FieldData[]>(stillLive.body, 'fields').map((f) => f.archived)).toEqual([false]);
  });
});

describe('orderFields', () => {
  test('renumbers the live fields in the order given', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const a = await defined(fieldInput('alpha', 'text'), headers);
    const b = await defined(fieldInput('beta', 'text'), headers);
    const c = await defined(fieldInput('gamma', 'text'), headers);
    const { body } = await svc.graph(ORDER, { ids: [c.id, a.id, b.id] }, headers);
    expect(dataOf(body, 'orderFields')).toEqual([
      { name: 'gamma', position: 0 },
      { name: 'alpha', position: 1 },
      { name: 'beta', position: 2 },
    ]);
    const listed = await svc.graph(FIELDS, {}, headers);
    expect(dataOf<FieldData[]>(listed.body, 'fields').map((f) => f.name)).toEqual([
      'gamma',
      'alpha',
      'beta',
    ]);
  });

  test('anything but every live id once is field_order_incomplete', async () => {
    const mine = await freshWorkspaceHeaders(svc);
    const theirs = await freshWorkspaceHeaders(svc);
    const a = await defined(fieldInput('alpha', 'text'), mine.headers);
    const b = await defined(fieldInput('beta', 'text'), mine.headers);
    const archived = await defined(fieldInput('gamma', 'text'), mine.headers);
    await svc.graph(ARCHIVE, { id: archived.id }, mine.headers);
    const foreign = await defined(fieldInput('alpha', 'text'), theirs.headers);
    for (const ids of [[a.id], [a.id, a.id], [a.id, b.id, archived.id], [a.id, foreign.id], []]) {
      const { body } = await svc.graph(ORDER, { ids }, mine.headers);
      expectReason(body, 'VALIDATION', 'field_order_incomplete');
    }
  });
});

describe('reservedFieldNames', () => {
  test("lists the contact's own fields, plugins' included, and look-alikes", async () => {
    const { body } = await svc.graph('{ reservedFieldNames }');
    const names = dataOf<string[]>(body, 'reservedFieldNames');
    expect(names).toEqual(
      expect.arrayContaining([
        'id',
        'name',
        'createdAt',
        'updatedAt',
        'identities',
        'tasks',
        'notes',
        'field',
        'fieldValues',
        'email',
        'phone',
      ]),
    );
    expect(names).toEqual([...names].sort());
    // Each of them is refused as a name.
    const { headers } = await freshWorkspaceHeaders(svc);
    expectReason(
      await define(fieldInput('notes', 'text'), headers),
      'VALIDATION',
      'field_name_reserved',
    );
  });
});
