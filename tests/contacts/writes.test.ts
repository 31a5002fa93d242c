// Contact writes (SPEC 2.3, 4.2, 7.3): every refusal with its reason, identity_taken with
// its owner even under a race, nothing half-written, the stored count and the events.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import { registerChannel } from '../../src/contacts/channels.js';
import { contactIdentities, contacts, workspaceCounts } from '../../src/contacts/tables.js';
import type { Db } from '../../src/db/client.js';
import { events } from '../../src/events/tables.js';
import {
  ADD_IDENTITY,
  CONTACT,
  CREATE_CONTACT,
  DELETE_IDENTITY,
  RENAME_CONTACT,
  createContactVia,
  dataOf,
  expectReason,
  freshWorkspaceHeaders,
  type ContactData,
  type IdentityData,
} from '../support/contacts.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
let db: Db;

beforeAll(async () => {
  // A platform-fed channel, as the chat plugin declares one: read-only to the graph.
  registerChannel({ name: 'test-chat', writable: false });
  svc = await startTestService();
  db = svc.db.database.db;
});

afterAll(() => svc.stop());

function email(): string {
  return `person-${randomUUID()}@example.com`;
}

function phone(): string {
  const n = String(Math.floor(Math.random() * 1e9)).padStart(9, '0');
  return `+44 7${n.slice(0, 3)} ${n.slice(3)}`;
}

async function eventsOf(subjectId: string) {
  return db
    .select({ name: events.name, data: events.data, audience: events.audienceUserId })
    .from(events)
    .where(eq(events.subjectId, subjectId))
    .orderBy(asc(events.at));
}

async function storedCount(workspaceId: string): Promise<number> {
  const [row] = await db
    .select()
    .from(workspaceCounts)
    .where(eq(workspaceCounts.workspaceId, workspaceId));
  return row?.contacts ?? 0;
}

async function addIdentity(
  contactId: string,
  identity: Record<string, unknown>,
  headers?: Record<string, string>,
) {
  return svc.graph(ADD_IDENTITY, { contactId, identity }, headers);
}

describe('createContact', () => {
  test('stores the trimmed name and normalised identities, counts it and records events', async () => {
    const before = await storedCount(svc.workspace.id);
    const address = email();
    const contact = await createContactVia(svc, '  Ada Lovelace ', [
      { channel: ' Email', identifier: `  ${address.toUpperCase()} `, displayName: 'Ada' },
      { channel: 'phone', identifier: '+44 (0) 20 7946-0018' },
    ]);
    expect(contact.name).toBe('Ada Lovelace');
    expect(contact.identities.map((i) => [i.channel, i.identifier, i.displayName])).toEqual([
      ['email', address.toUpperCase(), 'Ada'],
      ['phone', '+44 (0) 20 7946-0018', null],
    ]);
    const keys = await db
      .select({ key: contactIdentities.identifierKey, digits: contactIdentities.identifierDigits })
      .from(contactIdentities)
      .where(eq(contactIdentities.contactId, contact.id))
      .orderBy(asc(contactIdentities.channel));
    expect(keys).toEqual([
      { key: address, digits: address.replace(/\D/g, '') },
      { key: '+4402079460018', digits: '4402079460018' },
    ]);
    expect(await storedCount(svc.workspace.id)).toBe(before + 1);
    const recorded = await eventsOf(contact.id);
    expect(recorded.map((e) => e.name)).toEqual([
      'contact.created',
      'contact.identity_added',
      'contact.identity_added',
    ]);
    expect(recorded.every((e) => e.audience === null)).toBe(true);
  });

  test('a repeated identity in one input is written once', async () => {
    const address = email();
    const contact = await createContactVia(svc, 'Twice', [
      { channel: 'email', identifier: address },
      { channel: 'email', identifier: address.toUpperCase() },
    ]);
    expect(contact.identities).toHaveLength(1);
  });

  test.each([[''], ['   ']])('a name of %j is refused with contact_name_required', async (name) => {
    const { body } = await svc.graph(CREATE_CONTACT, { input: { name } });
    expectReason(body, 'VALIDATION', 'contact_name_required');
  });

  test.each([
    ['identity_channel_required', { channel: ' ', identifier: 'x@example.com' }],
    ['identity_identifier_required', { channel: 'email', identifier: '  ' }],
  ])('an identity refused with %s leaves no contact', async (reason, identity) => {
    const name = `Refused ${randomUUID()}`;
    const { body } = await svc.graph(CREATE_CONTACT, { input: { name, identities: [identity] } });
    expectReason(body, 'VALIDATION', reason);
    expect(await db.select().from(contacts).where(eq(contacts.name, name))).toEqual([]);
  });

  test('a phone identifier given without a digit is identity_identifier_malformed, saying so', async () => {
    const name = `Refused ${randomUUID()}`;
    const { body } = await svc.graph(CREATE_CONTACT, {
      input: { name, identities: [{ channel: 'phone', identifier: 'call me' }] },
    });
    expectReason(body, 'VALIDATION', 'identity_identifier_malformed', { channel: 'phone' });
    expect(body.errors?.[0]?.message).toBe('a phone number needs at least one digit');
    expect(await db.select().from(contacts).where(eq(contacts.name, name))).toEqual([]);
  });

  test('a channel that accepts no writes is refused with channel_not_writable', async () => {
    const { body } = await svc.graph(CREATE_CONTACT, {
      input: { name: 'Chatty', identities: [{ channel: 'test-chat', identifier: '@chatty' }] },
    });
    expectReason(body, 'VALIDATION', 'channel_not_writable');
  });

  test('an unknown channel is refused with channel_unknown, naming it', async () => {
    const { body } = await svc.graph(CREATE_CONTACT, {
      input: { name: 'Pigeon', identities: [{ channel: 'Pigeon', identifier: 'loft 7' }] },
    });
    expectReason(body, 'VALIDATION', 'channel_unknown', { channel: 'pigeon' });
  });

  test('a taken second identity leaves no contact, no identity, no event and the count alone', async () => {
    const taken = email();
    const owner = await createContactVia(svc, 'Owner', [{ channel: 'email', identifier: taken }]);
    const before = await storedCount(svc.workspace.id);
    const fresh = email();
    const name = `Half ${randomUUID()}`;
    const { body } = await svc.graph(CREATE_CONTACT, {
      input: {
        name,
        identities: [
          { channel: 'email', identifier: fresh },
          { channel: 'email', identifier: ` ${taken.toUpperCase()}` },
        ],
      },
    });
    expectReason(body, 'CONFLICT', 'identity_taken', { ownerContactId: owner.id });
    expect(await db.select().from(contacts).where(eq(contacts.name, name))).toEqual([]);
    const orphan = await db
      .select()
      .from(contactIdentities)
      .where(eq(contactIdentities.identifierKey, fresh));
    expect(orphan).toEqual([]);
    expect(await storedCount(svc.workspace.id)).toBe(before);
    const created = await db
      .select()
      .from(events)
      .where(and(eq(events.name, 'contact.created'), eq(events.workspaceId, svc.workspace.id)));
    expect(created.filter((e) => e.data.name === name)).toEqual([]);
  });
});

describe('renameContact', () => {
  test('renames, moves updatedAt and records contact.renamed with both names', async () => {
    const contact = await createContactVia(svc, 'Before');
    const { body } = await svc.graph(RENAME_CONTACT, { id: contact.id, name: ' After ' });
    const renamed = dataOf<ContactData>(body, 'renameContact');
    expect(renamed.name).toBe('After');
    expect(new Date(renamed.updatedAt) > new Date(contact.updatedAt)).toBe(true);
    const recorded = await eventsOf(contact.id);
    expect(recorded.at(-1)).toEqual({
      name: 'contact.renamed',
      data: { contactId: contact.id, from: 'Before', to: 'After' },
      audience: null,
    });
  });

  test('an empty name is refused with contact_name_required', async () => {
    const contact = await createContactVia(svc, 'Keeps');
    const { body } = await svc.graph(RENAME_CONTACT, { id: contact.id, name: ' ' });
    expectReason(body, 'VALIDATION', 'contact_name_required');
  });
});

describe('addContactIdentity', () => {
  test('adds the identity, answers it with its contact and records the event', async () => {
    const contact = await createContactVia(svc, 'Grace');
    const { body } = await addIdentity(contact.id, {
      channel: 'phone',
      identifier: '+1 555 010 2030',
      displayName: 'Work',
    });
    const result = dataOf<{ identity: IdentityData; contact: ContactData }>(
      body,
      'addContactIdentity',
    );
    expect(result.identity).toMatchObject({ channel: 'phone', identifier: '+1 555 010 2030' });
    expect(result.contact.identities.map((i) => i.id)).toEqual([result.identity.id]);
    expect((await eventsOf(contact.id)).at(-1)).toMatchObject({
      name: 'contact.identity_added',
      data: { contactId: contact.id, identityId: result.identity.id, channel: 'phone' },
    });
  });

  test('a number held by another contact however written is identity_taken naming it', async () => {
    const owner = await createContactVia(svc, 'Holder', [
      { channel: 'phone', identifier: '+1 (555) 010-9999' },
    ]);
    const other = await createContactVia(svc, 'Claimant');
    const { body } = await addIdentity(other.id, { channel: 'phone', identifier: '+15550109999' });
    expectReason(body, 'CONFLICT', 'identity_taken', { ownerContactId: owner.id });
  });

  test('an identity the contact already holds answers the stored one', async () => {
    const address = email();
    const contact = await createContactVia(svc, 'Again', [
      { channel: 'email', identifier: address },
    ]);
    const { body } = await addIdentity(contact.id, { channel: 'email', identifier: address });
    const result = dataOf<{ identity: IdentityData }>(body, 'addContactIdentity');
    expect(result.identity.id).toBe(contact.identities[0]?.id);
  });

  test('two racing adds of one identifier to two contacts: one wins, the other is told the winner', async () => {
    const [a, b] = await Promise.all([
      createContactVia(svc, 'Racer A'),
      createContactVia(svc, 'Racer B'),
    ]);
    const number = phone();
    for (let round = 0; round < 3; round += 1) {
      const identifier = round === 0 ? number : phone();
      const answers = await Promise.all(
        [a, b].map((c) => addIdentity(c!.id, { channel: 'phone', identifier })),
      );
      const winners = answers.filter((r) => !r.body.errors);
      const losers = answers.filter((r) => r.body.errors);
      expect(winners).toHaveLength(1);
      expect(losers).toHaveLength(1);
      const winner = dataOf<{ contact: ContactData }>(winners[0]!.body, 'addContactIdentity');
      expectReason(losers[0]!.body, 'CONFLICT', 'identity_taken', {
        ownerContactId: winner.contact.id,
      });
      const rows = await db
        .select()
        .from(contactIdentities)
        .where(eq(contactIdentities.identifier, identifier));
      expect(rows).toHaveLength(1);
    }
  });

  test('two racing creates holding one identifier: exactly one contact is created', async () => {
    const address = email();
    const answers = await Promise.all(
      ['Twin A', 'Twin B'].map((name) =>
        svc.graph(CREATE_CONTACT, {
          input: { name, identities: [{ channel: 'email', identifier: address }] },
        }),
      ),
    );
    const winners = answers.filter((r) => !r.body.errors);
    expect(winners).toHaveLength(1);
    const winner = dataOf<ContactData>(winners[0]!.body, 'createContact');
    const loser = answers.find((r) => r.body.errors)!;
    expectReason(loser.body, 'CONFLICT', 'identity_taken', { ownerContactId: winner.id });
  });

  test.each([
    ['identity_channel_required', { channel: '', identifier: 'a@example.com' }],
    ['identity_identifier_required', { channel: 'email', identifier: '' }],
    ['channel_not_writable', { channel: 'test-chat', identifier: '@someone' }],
  ])('is refused with %s', async (reason, identity) => {
    const contact = await createContactVia(svc, 'Refuser');
    const { body } = await addIdentity(contact.id, identity);
    expectReason(body, 'VALIDATION', reason);
  });

  test('an unknown contact is contact_not_found', async () => {
    const { body } = await addIdentity(randomUUID(), { channel: 'email', identifier: email() });
    expectReason(body, 'NOT_FOUND', 'contact_not_found');
  });
});

describe('deleteContactIdentity', () => {
  test('removes the identity, records the event; a second delete is identity_not_found', async () => {
    const contact = await createContactVia(svc, 'Shedding', [
      { channel: 'email', identifier: email() },
    ]);
    const id = contact.identities[0]!.id;
    const first = await svc.graph(DELETE_IDENTITY, { id });
    const result = dataOf<{ identity: IdentityData; contact: ContactData }>(
      first.body,
      'deleteContactIdentity',
    );
    expect(result.identity.id).toBe(id);
    expect(result.contact.identities).toEqual([]);
    expect((await eventsOf(contact.id)).at(-1)).toMatchObject({
      name: 'contact.identity_removed',
      data: { contactId: contact.id, identityId: id },
    });
    const second = await svc.graph(DELETE_IDENTITY, { id });
    expectReason(second.body, 'NOT_FOUND', 'identity_not_found');
  });

  test('a freed identity may go to another contact', async () => {
    const address = email();
    const first = await createContactVia(svc, 'First', [{ channel: 'email', identifier: address }]);
    await svc.graph(DELETE_IDENTITY, { id: first.identities[0]!.id });
    const second = await createContactVia(svc, 'Second', [
      { channel: 'email', identifier: address },
    ]);
    expect(second.identities).toHaveLength(1);
  });
});

describe('workspaces and scopes', () => {
  test("another workspace's ids answer exactly as unknown ones", async () => {
    const other = await freshWorkspaceHeaders(svc);
    const theirs = await createContactVia(
      svc,
      'Theirs',
      [{ channel: 'email', identifier: email() }],
      other.headers,
    );
    const identityId = theirs.identities[0]!.id;
    const attempts = [
      [CONTACT, { id: theirs.id }, 'contact_not_found'],
      [RENAME_CONTACT, { id: theirs.id, name: 'Mine' }, 'contact_not_found'],
      [
        ADD_IDENTITY,
        { contactId: theirs.id, identity: { channel: 'email', identifier: email() } },
        'contact_not_found',
      ],
      [DELETE_IDENTITY, { id: identityId }, 'identity_not_found'],
    ] as const;
    for (const [query, variables, reason] of attempts) {
      const mine = await svc.graph(query, variables);
      const unknown = await svc.graph(query, {
        ...variables,
        ...('id' in variables ? { id: randomUUID() } : { contactId: randomUUID() }),
      });
      expectReason(mine.body, 'NOT_FOUND', reason);
      expect(mine.body.errors?.[0]?.message).toBe(unknown.body.errors?.[0]?.message);
    }
    const still = await svc.graph(CONTACT, { id: theirs.id }, other.headers);
    expect(dataOf<ContactData>(still.body, 'contact')).toMatchObject({
      name: 'Theirs',
      identities: [{ id: identityId }],
    });
  });

  test('a token holding contacts:read reads but cannot write (scope_missing)', async () => {
    const reader = await freshWorkspaceHeaders(svc, ['contacts:read']);
    const contact = await createContactVia(svc, 'Read only');
    const writes = [
      [CREATE_CONTACT, { input: { name: 'Nope' } }],
      [RENAME_CONTACT, { id: contact.id, name: 'Nope' }],
      [
        ADD_IDENTITY,
        { contactId: contact.id, identity: { channel: 'email', identifier: email() } },
      ],
      [DELETE_IDENTITY, { id: randomUUID() }],
    ] as const;
    for (const [query, variables] of writes) {
      const { body } = await svc.graph(query, variables, reader.headers);
      expectReason(body, 'UNAUTHORIZED', 'scope_missing', { scope: 'contacts:write' });
    }
    const { body } = await svc.graph('query { contactPage { total } }', {}, reader.headers);
    expect(dataOf(body, 'contactPage')).toEqual({ total: 0 });
  });

  test('a token without the contacts area cannot read (scope_missing)', async () => {
    const other = await freshWorkspaceHeaders(svc, ['users:read']);
    const { body } = await svc.graph('query { contacts { edges { cursor } } }', {}, other.headers);
    expectReason(body, 'UNAUTHORIZED', 'scope_missing', { scope: 'contacts:read' });
  });
});
