// Identities added to existing contacts in bulk (the SDK's addIdentitiesIn, issue 28): judged
// as addContactIdentity judges one, in the caller's transaction, and the counts a caller
// judges the cap by.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import {
  addIdentitiesIn,
  createContactsIn,
  identityCounts,
  prepareContact,
  type NewContact,
} from '../../src/plugin-sdk/index.js';
import { contactIdentities, contacts } from '../../src/contacts/tables.js';
import type { Db } from '../../src/db/client.js';
import { AppError } from '../../src/errors.js';
import { IDENTITIES_PER_CONTACT } from '../../src/limits.js';
import { createContactVia, freshWorkspaceHeaders, refusalIn } from '../support/contacts.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
let db: Db;

beforeAll(async () => {
  svc = await startTestService();
  db = svc.db.database.db;
});

afterAll(() => svc.stop());

/** A normalised identity, as prepareContact makes them. */
function identity(channel: string, identifier: string): NewContact['identities'][number] {
  const prepared = prepareContact({ name: 'x', identities: [{ channel, identifier }] });
  if (prepared instanceof AppError) throw prepared;
  return prepared.identities[0]!;
}

async function contactIn(headers: Record<string, string>, address = `${randomUUID()}@example.com`) {
  return createContactVia(svc, 'Held', [{ channel: 'email', identifier: address }], headers);
}

async function identitiesOf(workspaceId: string, contactId: string) {
  const rows = await db
    .select({ identifier: contactIdentities.identifier })
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, workspaceId),
        eq(contactIdentities.contactId, contactId),
      ),
    );
  return rows.map((row) => row.identifier).sort();
}

/** The refusal `write` throws inside a transaction that is rolled back. */
const refusal = (write: (tx: Db) => Promise<unknown>) => refusalIn(db, write);

describe('createContactsIn', () => {
  test('gives the contacts the ids a caller planned, in input order', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const planned = [randomUUID(), randomUUID()];
    const given = ['Ada', 'Bea'].map((name) => {
      const contact = prepareContact({
        name,
        identities: [{ channel: 'email', identifier: `${randomUUID()}@example.com` }],
      });
      if (contact instanceof AppError) throw contact;
      return contact;
    });
    const ids = await db.transaction((tx) =>
      createContactsIn(tx, workspaceId, given, { ids: planned }),
    );
    expect(ids).toEqual(planned);
    const stored = await db
      .select({ id: contacts.id, name: contacts.name })
      .from(contacts)
      .where(eq(contacts.workspaceId, workspaceId));
    expect(stored.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { id: planned[0], name: 'Ada' },
      { id: planned[1], name: 'Bea' },
    ]);
    expect(await identitiesOf(workspaceId, planned[1]!)).toEqual([
      given[1]!.identities[0]!.identifier,
    ]);
    // Found through the graph as any contact is.
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { name } }',
      { id: planned[0] },
      headers,
    );
    expect(body).toEqual({ data: { contact: { name: 'Ada' } } });
  });

  test('stamps identities a microsecond apart in input order, across milliseconds', async () => {
    const { workspaceId } = await freshWorkspaceHeaders(svc);
    // 2,500 identities span three milliseconds of stamps (each millisecond's text is shared).
    const given = Array.from({ length: 1_250 }, (_, i) => {
      const contact = prepareContact({
        name: `C${i}`,
        identities: [
          { channel: 'email', identifier: `c${i}@example.com` },
          { channel: 'phone', identifier: `+44 20 7946 ${String(i).padStart(4, '0')}` },
        ],
      });
      if (contact instanceof AppError) throw contact;
      return contact;
    });
    await db.transaction((tx) => createContactsIn(tx, workspaceId, given));
    const stamped = await svc.db.database.sql<{ identifier: string; step: string | null }[]>`
      select identifier,
        (created_at - lag(created_at) over (order by created_at))::text as step
      from contact_identities where workspace_id = ${workspaceId} order by created_at`;
    expect(stamped.map((row) => row.identifier)).toEqual(
      given.flatMap((contact) => contact.identities.map((identity) => identity.identifier)),
    );
    expect(new Set(stamped.slice(1).map((row) => row.step))).toEqual(new Set(['00:00:00.000001']));
  });

  test('an id count that does not match the contacts is refused before anything is written', async () => {
    const { workspaceId } = await freshWorkspaceHeaders(svc);
    const contact = prepareContact({
      name: 'Ada',
      identities: [{ channel: 'email', identifier: 'a@example.com' }],
    });
    if (contact instanceof AppError) throw contact;
    await expect(
      db.transaction((tx) => createContactsIn(tx, workspaceId, [contact], { ids: [] })),
    ).rejects.toThrow('one id per contact');
  });
});

describe('addIdentitiesIn', () => {
  test('adds identities, leaves one the contact holds as it is, and touches the contact', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const contact = await contactIn(headers, 'ada@example.com');
    const added = await db.transaction((tx) =>
      addIdentitiesIn(tx, workspaceId, [
        { contactId: contact.id, identity: identity('email', 'ADA@example.com') },
        { contactId: contact.id, identity: identity('phone', '+44 20 7946 0000') },
      ]),
    );
    expect(added).toEqual([
      {
        id: expect.any(String),
        contactId: contact.id,
        channel: 'phone',
        identifier: '+44 20 7946 0000',
      },
    ]);
    expect(await identitiesOf(workspaceId, contact.id)).toEqual([
      '+44 20 7946 0000',
      'ada@example.com',
    ]);
    const [row] = await db.select().from(contacts).where(eq(contacts.id, contact.id));
    expect(row!.updatedAt.getTime()).toBeGreaterThan(new Date(contact.updatedAt).getTime());
  });

  test('an identity another contact holds refuses the whole write, naming that contact', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const one = await contactIn(headers);
    const other = await contactIn(headers, 'taken@example.com');
    const error = await refusal((tx) =>
      addIdentitiesIn(tx, workspaceId, [
        { contactId: one.id, identity: identity('phone', '+1 555 0100') },
        { contactId: one.id, identity: identity('email', 'Taken@example.com') },
      ]),
    );
    expect([error.reason, error.meta]).toEqual(['identity_taken', { ownerContactId: other.id }]);
    expect(await identitiesOf(workspaceId, one.id)).toHaveLength(1);
  });

  test('one identity given to two contacts goes to the first; the second is refused', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const [one, two] = [await contactIn(headers), await contactIn(headers)];
    const error = await refusal((tx) =>
      addIdentitiesIn(tx, workspaceId, [
        { contactId: one.id, identity: identity('phone', '+1 555 0101') },
        { contactId: two.id, identity: identity('phone', '+1 (555) 0101') },
      ]),
    );
    expect([error.reason, error.meta]).toEqual(['identity_taken', { ownerContactId: one.id }]);
  });

  test('a contact of another workspace is contact_not_found, and nothing is written', async () => {
    const { workspaceId } = await freshWorkspaceHeaders(svc);
    const elsewhere = await freshWorkspaceHeaders(svc);
    const theirs = await contactIn(elsewhere.headers);
    const error = await refusal((tx) =>
      addIdentitiesIn(tx, workspaceId, [
        { contactId: theirs.id, identity: identity('phone', '+1 555 0102') },
      ]),
    );
    expect(error.reason).toBe('contact_not_found');
    expect(await identitiesOf(elsewhere.workspaceId, theirs.id)).toHaveLength(1);
  });

  test('a contact left past IDENTITIES_PER_CONTACT is identities_full', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const contact = await contactIn(headers);
    const phones = Array.from({ length: IDENTITIES_PER_CONTACT }, (_, i) => ({
      contactId: contact.id,
      identity: identity('phone', `+1 555 ${String(1000 + i)}`),
    }));
    const error = await refusal((tx) => addIdentitiesIn(tx, workspaceId, phones));
    expect([error.reason, error.meta]).toEqual([
      'identities_full',
      { max: IDENTITIES_PER_CONTACT },
    ]);
    // One fewer fits exactly.
    await db.transaction((tx) => addIdentitiesIn(tx, workspaceId, phones.slice(1)));
    const counts = await identityCounts(db, workspaceId, [contact.id, contact.id]);
    expect([...counts]).toEqual([[contact.id, IDENTITIES_PER_CONTACT]]);
  });
});

describe('identityCounts', () => {
  test('counts only the workspace’s contacts', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const mine = await contactIn(headers);
    const theirs = await contactIn((await freshWorkspaceHeaders(svc)).headers);
    const counts = await identityCounts(db, workspaceId, [mine.id, theirs.id]);
    expect([...counts]).toEqual([[mine.id, 1]]);
  });
});
