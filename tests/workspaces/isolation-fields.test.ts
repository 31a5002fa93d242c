// The fields plugin's ids from another workspace (B's field, B's contact, B's entry),
// each answered exactly as a made-up id, and nothing written on either side.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createContactVia, dataOf, freshWorkspaceHeaders } from '../support/contacts.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';
import { startTestService, type TestService } from '../support/service.js';
import {
  ADD_ENTRY,
  DEFINE,
  DELETE_ENTRY,
  READ,
  UPDATE_ENTRY,
  WRITE,
  fieldInput,
  type FieldData,
} from '../plugins/fields/support.js';

let svc: TestService;
let b: Record<string, string>;
let bField: FieldData;
let bContact: string;
let bEntry: string;
let aContact: string;
let aEntry: string;

const subFields = [{ name: 'street', label: 'Street', kind: 'text' }];
const ARCHIVE = `mutation ($id: UUID!) { archiveField(id: $id) { id } }`;
const ORDER = `mutation ($ids: [UUID!]!) { orderFields(ids: $ids) { id } }`;

async function defineIn(headers: Record<string, string> | undefined, input: object) {
  return dataOf<FieldData>((await svc.graph(DEFINE, { input }, headers)).body, 'defineField');
}

async function entryOf(contactId: string, headers?: Record<string, string>) {
  const { body } = await svc.graph(
    ADD_ENTRY,
    { contactId, field: 'addresses', values: { street: 'Home' } },
    headers,
  );
  return dataOf<{ id: string }>(body, 'addContactFieldEntry').id;
}

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
  b = (await freshWorkspaceHeaders(svc)).headers;
  for (const headers of [undefined, b]) {
    await defineIn(headers, fieldInput('tier', 'text'));
    await defineIn(headers, fieldInput('addresses', 'repeater', { subFields }));
  }
  bField = await defineIn(b, fieldInput('industry', 'text'));
  bContact = (await createContactVia(svc, 'Bea in B', [], b)).id;
  bEntry = await entryOf(bContact, b);
  aContact = (await createContactVia(svc, 'Ada in A')).id;
  aEntry = await entryOf(aContact);
});

afterAll(() => svc.stop());

async function bState() {
  const fields = await svc.graph('{ fields { id archived position } }', {}, b);
  const tier = await svc.graph(READ, { id: bContact, name: 'tier' }, b);
  const addresses = await svc.graph(READ, { id: bContact, name: 'addresses' }, b);
  return [fields.body, tier.body, addresses.body];
}

describe('field ids of another workspace', () => {
  test("archiveField(id) and orderFields(ids) with B's field", async () => {
    const before = await bState();
    await expectAnsweredAsUnknown(svc, 'archiveField(id)', ARCHIVE, (id) => ({ id }), bField.id);
    await expectAnsweredAsUnknown(
      svc,
      'orderFields(ids)',
      ORDER,
      (id) => ({ ids: [id] }),
      bField.id,
    );
    expect(await bState()).toEqual(before);
  });
});

describe('contact and entry ids of another workspace', () => {
  test("writeContactFields(contactId) and the entry mutations' contactId with B's contact", async () => {
    const before = await bState();
    await expectAnsweredAsUnknown(
      svc,
      'writeContactFields(contactId)',
      WRITE,
      (contactId) => ({ contactId, values: { tier: 'Planted by A' } }),
      bContact,
    );
    await expectAnsweredAsUnknown(
      svc,
      'addContactFieldEntry(contactId)',
      ADD_ENTRY,
      (contactId) => ({ contactId, field: 'addresses', values: { street: 'Planted' } }),
      bContact,
    );
    await expectAnsweredAsUnknown(
      svc,
      'updateContactFieldEntry(contactId)',
      UPDATE_ENTRY,
      (contactId) => ({ contactId, field: 'addresses', entryId: bEntry, values: { street: 'x' } }),
      bContact,
    );
    await expectAnsweredAsUnknown(
      svc,
      'deleteContactFieldEntry(contactId)',
      DELETE_ENTRY,
      (contactId) => ({ contactId, field: 'addresses', entryId: bEntry }),
      bContact,
    );
    expect(await bState()).toEqual(before);
  });

  test("updateContactFieldEntry(entryId) and deleteContactFieldEntry(entryId) with B's entry", async () => {
    const before = await bState();
    await expectAnsweredAsUnknown(
      svc,
      'updateContactFieldEntry(entryId)',
      UPDATE_ENTRY,
      (entryId) => ({ contactId: aContact, field: 'addresses', entryId, values: { street: 'x' } }),
      bEntry,
    );
    await expectAnsweredAsUnknown(
      svc,
      'deleteContactFieldEntry(entryId)',
      DELETE_ENTRY,
      (entryId) => ({ contactId: aContact, field: 'addresses', entryId }),
      bEntry,
    );
    expect(await bState()).toEqual(before);
    // A's own entry is untouched too.
    const { body } = await svc.graph(READ, { id: aContact, name: 'addresses' });
    expect(dataOf<{ field: { id: string }[] }>(body, 'contact').field.map((e) => e.id)).toEqual([
      aEntry,
    ]);
  });
});
