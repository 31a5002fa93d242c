// Contacts written from rows a plugin staged (the SDK's createContactsFrom, addIdentitiesFrom
// and lockContactsFrom, what an import's commit writes with): one statement a table, the
// rows read where they are, judged as the in-memory bulk writes judge them.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import {
  addIdentitiesFrom,
  createContactsFrom,
  lockContactsFrom,
  prepareContact,
} from '../../src/plugin-sdk/index.js';
import type { Db } from '../../src/db/client.js';
import { AppError } from '../../src/errors.js';
import { IDENTITIES_PER_CONTACT } from '../../src/limits.js';
import { createContactVia, dataOf, freshWorkspaceHeaders, refusalIn } from '../support/contacts.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
let db: Db;

beforeAll(async () => {
  svc = await startTestService();
  db = svc.db.database.db;
});

afterAll(() => svc.stop());

/** Contacts as a staged select: id and name. */
function stagedContacts(rows: readonly { id: string; name: string }[]): SQL {
  const values = sql.join(
    rows.map((row) => sql`(${row.id}::uuid, ${row.name}::text)`),
    sql`, `,
  );
  return sql`select * from (values ${values}) as given(id, name)`;
}

/** Identities as a staged select (prepared as prepareContact prepares them), in order. */
function stagedIdentities(
  rows: readonly { contactId: string; channel: string; identifier: string }[],
) {
  const values = sql.join(
    rows.map((row, n) => {
      const prepared = prepareContact({ name: 'x', identities: [row] });
      if (prepared instanceof AppError) throw prepared;
      const identity = prepared.identities[0]!;
      return sql`(${n}, ${row.contactId}::uuid, ${identity.channel}::text,
        ${identity.identifier}::text, ${identity.identifierKey}::text, null::text)`;
    }),
    sql`, `,
  );
  return sql`select contact_id, channel, identifier, identifier_key, display_name
    from (values ${values}) as given(n, contact_id, channel, identifier, identifier_key, display_name)
    order by n`;
}

async function identitiesOf(workspaceId: string, contactId: string): Promise<string[]> {
  const rows = await svc.db.database.sql<{ identifier: string }[]>`
    select identifier from contact_identities
    where workspace_id = ${workspaceId} and contact_id = ${contactId}
    order by created_at, id`;
  return rows.map((row) => row.identifier);
}

/** The refusal `write` throws inside a transaction that is rolled back. */
const refusal = (write: (tx: Db) => Promise<unknown>) => refusalIn(db, write);

const TOTAL = '{ contactPage(limit: 1) { total } }';

describe('createContactsFrom', () => {
  test('creates the staged contacts with their identities in source order, counted', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const [ada, bea] = [randomUUID(), randomUUID()];
    const created = await db.transaction((tx) =>
      createContactsFrom(tx, workspaceId, {
        contacts: stagedContacts([
          { id: ada, name: 'Ada' },
          { id: bea, name: 'Bea' },
        ]),
        identities: stagedIdentities([
          { contactId: ada, channel: 'email', identifier: 'Ada@Example.com' },
          { contactId: ada, channel: 'phone', identifier: '+44 20 7946 0001' },
          { contactId: bea, channel: 'email', identifier: 'bea@example.com' },
        ]),
      }),
    );
    expect(created).toBe(2);
    expect(await identitiesOf(workspaceId, ada)).toEqual(['Ada@Example.com', '+44 20 7946 0001']);
    // Found, searched and counted as any contact is.
    const { body } = await svc.graph(
      '{ contactPage(q: "ada") { total items { id name identities { identifier } } } }',
      {},
      headers,
    );
    expect(dataOf(body, 'contactPage')).toEqual({
      total: 1,
      items: [
        {
          id: ada,
          name: 'Ada',
          identities: [{ identifier: 'Ada@Example.com' }, { identifier: '+44 20 7946 0001' }],
        },
      ],
    });
    expect(dataOf(await svc.graph(TOTAL, {}, headers).then((r) => r.body), 'contactPage')).toEqual({
      total: 2,
    });
  });

  test('an identity another contact holds refuses the whole write, naming that contact', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const holder = await createContactVia(
      svc,
      'Held',
      [{ channel: 'email', identifier: 'taken@example.com' }],
      headers,
    );
    const fresh = randomUUID();
    const error = await refusal((tx) =>
      createContactsFrom(
        tx,
        workspaceId,
        {
          contacts: stagedContacts([{ id: fresh, name: 'Late' }]),
          identities: stagedIdentities([
            { contactId: fresh, channel: 'email', identifier: 'TAKEN@example.com' },
          ]),
        },
        { lookup: db },
      ),
    );
    expect([error.reason, error.meta]).toEqual(['identity_taken', { ownerContactId: holder.id }]);
    expect(dataOf(await svc.graph(TOTAL, {}, headers).then((r) => r.body), 'contactPage')).toEqual({
      total: 1,
    });
  });

  test('an address another workspace holds is no obstacle', async () => {
    const elsewhere = await freshWorkspaceHeaders(svc);
    await createContactVia(
      svc,
      'Theirs',
      [{ channel: 'email', identifier: 'shared@example.com' }],
      elsewhere.headers,
    );
    const { workspaceId } = await freshWorkspaceHeaders(svc);
    const mine = randomUUID();
    await db.transaction((tx) =>
      createContactsFrom(tx, workspaceId, {
        contacts: stagedContacts([{ id: mine, name: 'Mine' }]),
        identities: stagedIdentities([
          { contactId: mine, channel: 'email', identifier: 'shared@example.com' },
        ]),
      }),
    );
    expect(await identitiesOf(workspaceId, mine)).toEqual(['shared@example.com']);
  });
});

describe('addIdentitiesFrom', () => {
  test('adds the staged identities, leaves one the contact holds, and touches the contact', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const contact = await createContactVia(
      svc,
      'Ada',
      [{ channel: 'email', identifier: 'ada@example.com' }],
      headers,
    );
    const written = await db.transaction((tx) =>
      addIdentitiesFrom(
        tx,
        workspaceId,
        stagedIdentities([
          { contactId: contact.id, channel: 'email', identifier: 'ADA@example.com' },
          { contactId: contact.id, channel: 'phone', identifier: '+44 20 7946 0002' },
        ]),
      ),
    );
    expect(written).toBe(1);
    expect(await identitiesOf(workspaceId, contact.id)).toEqual([
      'ada@example.com',
      '+44 20 7946 0002',
    ]);
    const [row] = await svc.db.database.sql<{ touched: boolean }[]>`
      select updated_at > ${contact.updatedAt}::timestamptz as touched
      from contacts where id = ${contact.id}`;
    expect(row!.touched).toBe(true);
  });

  test('an identity another contact holds refuses the whole write, naming that contact', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const one = await createContactVia(
      svc,
      'One',
      [{ channel: 'email', identifier: 'one@example.com' }],
      headers,
    );
    const other = await createContactVia(
      svc,
      'Other',
      [{ channel: 'email', identifier: 'other@example.com' }],
      headers,
    );
    const error = await refusal((tx) =>
      addIdentitiesFrom(
        tx,
        workspaceId,
        stagedIdentities([
          { contactId: one.id, channel: 'phone', identifier: '+1 555 0100' },
          { contactId: one.id, channel: 'email', identifier: 'Other@example.com' },
        ]),
      ),
    );
    expect([error.reason, error.meta]).toEqual(['identity_taken', { ownerContactId: other.id }]);
    expect(await identitiesOf(workspaceId, one.id)).toEqual(['one@example.com']);
  });

  test('a contact of another workspace is contact_not_found, and nothing is written', async () => {
    const { workspaceId } = await freshWorkspaceHeaders(svc);
    const elsewhere = await freshWorkspaceHeaders(svc);
    const theirs = await createContactVia(
      svc,
      'Theirs',
      [{ channel: 'email', identifier: 'theirs@example.com' }],
      elsewhere.headers,
    );
    const error = await refusal((tx) =>
      addIdentitiesFrom(
        tx,
        workspaceId,
        stagedIdentities([{ contactId: theirs.id, channel: 'phone', identifier: '+1 555 0102' }]),
      ),
    );
    expect(error.reason).toBe('contact_not_found');
    expect(await identitiesOf(elsewhere.workspaceId, theirs.id)).toEqual(['theirs@example.com']);
  });

  test('a contact left past IDENTITIES_PER_CONTACT is identities_full', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const contact = await createContactVia(
      svc,
      'Full',
      [{ channel: 'email', identifier: 'full@example.com' }],
      headers,
    );
    const phones = Array.from({ length: IDENTITIES_PER_CONTACT }, (_, i) => ({
      contactId: contact.id,
      channel: 'phone',
      identifier: `+1 555 ${String(1000 + i)}`,
    }));
    const error = await refusal((tx) =>
      addIdentitiesFrom(tx, workspaceId, stagedIdentities(phones)),
    );
    expect([error.reason, error.meta]).toEqual([
      'identities_full',
      { max: IDENTITIES_PER_CONTACT },
    ]);
    // One fewer fits exactly.
    await db.transaction((tx) =>
      addIdentitiesFrom(tx, workspaceId, stagedIdentities(phones.slice(1))),
    );
    expect(await identitiesOf(workspaceId, contact.id)).toHaveLength(IDENTITIES_PER_CONTACT);
  });
});

describe('lockContactsFrom', () => {
  test('locks the workspace’s contacts named; one gone or another workspace’s is contact_not_found', async () => {
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const mine = await createContactVia(
      svc,
      'Mine',
      [{ channel: 'email', identifier: 'mine@example.com' }],
      headers,
    );
    const theirs = await createContactVia(
      svc,
      'Theirs',
      [{ channel: 'email', identifier: 'theirs@example.com' }],
      (await freshWorkspaceHeaders(svc)).headers,
    );
    const named = (ids: string[]) =>
      sql`select * from (values ${sql.join(
        ids.map((id) => sql`(${id}::uuid)`),
        sql`, `,
      )}) as given(contact_id)`;
    // Held for the transaction: another writer's update of the contact waits for it.
    await db.transaction(async (tx) => {
      await lockContactsFrom(tx, workspaceId, named([mine.id, mine.id]));
      const free = await svc.db.database.sql`
        select id from contacts where id = ${mine.id} for update skip locked`;
      expect(free).toHaveLength(0);
    });
    for (const ids of [[mine.id, theirs.id], [randomUUID()]]) {
      const error = await refusal((tx) => lockContactsFrom(tx, workspaceId, named(ids)));
      expect(error.reason).toBe('contact_not_found');
    }
  });
});
