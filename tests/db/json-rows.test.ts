// Rows carried as JSON in another row's statement come back as the rows Drizzle maps.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { asc, eq, getTableColumns, sql } from 'drizzle-orm';
import { insertContact, insertIdentity } from '../../src/contacts/queries.js';
import { contactIdentities, type ContactIdentity } from '../../src/contacts/tables.js';
import { jsonRows } from '../../src/db/json-rows.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(() => database.drop());

test('a json_agg of rows revives to what a select of the same rows maps', async () => {
  const { db } = database.database;
  const workspace = await createWorkspace(db);
  const contact = await insertContact(db, workspace.id, 'Ada');
  await insertIdentity(db, workspace.id, contact.id, {
    channel: 'email',
    identifier: 'ada@example.com',
    identifierKey: 'ada@example.com',
    displayName: 'Ada "the first" Lovelace',
  });
  await insertIdentity(db, workspace.id, contact.id, {
    channel: 'phone',
    identifier: '+44 20 7946 0000',
    identifierKey: '+442079460000',
    displayName: null,
  });
  const rows = jsonRows<ContactIdentity>(getTableColumns(contactIdentities));
  const [carried] = await db
    .select({
      json: sql<unknown>`json_agg(${rows.row} order by ${contactIdentities.createdAt}, ${contactIdentities.id})`,
    })
    .from(contactIdentities)
    .where(eq(contactIdentities.contactId, contact.id));
  const selected = await db
    .select()
    .from(contactIdentities)
    .where(eq(contactIdentities.contactId, contact.id))
    .orderBy(asc(contactIdentities.createdAt), asc(contactIdentities.id));
  const revived = rows.revive(carried?.json);
  expect(revived).toEqual(selected);
  expect(revived[0]?.createdAt).toBeInstanceOf(Date);
  expect(rows.revive(null)).toEqual([]);
});
