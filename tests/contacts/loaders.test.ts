// SPEC 4.2: the identities of every contact on a page load in one read.
import { describe, expect, jest, test } from '@jest/globals';
import { drizzle } from 'drizzle-orm/postgres-js';
import { randomUUID } from 'node:crypto';
import { contactLoaders, identitiesLoader } from '../../src/contacts/loaders.js';
import type { ContactIdentity } from '../../src/contacts/tables.js';
import { createContactVia, freshWorkspaceHeaders } from '../support/contacts.js';
import { useTestService } from '../support/service.js';

function identity(contactId: string, identifier: string): ContactIdentity {
  return {
    workspaceId: 'w',
    id: randomUUID(),
    contactId,
    channel: 'email',
    identifier,
    identifierKey: identifier,
    identifierDigits: '',
    displayName: null,
    createdAt: new Date(),
  };
}

describe('identitiesLoader', () => {
  test('the loads of one tick become one batch read, answered in key order', async () => {
    const rows = [identity('b', 'b1@x'), identity('a', 'a1@x'), identity('b', 'b2@x')];
    const load = jest.fn(async (_ids: readonly string[]) => rows);
    const loader = identitiesLoader(load);
    const answers = await Promise.all(['a', 'b', 'c'].map((id) => loader.load(id)));
    expect(load).toHaveBeenCalledTimes(1);
    expect(load.mock.calls[0]?.[0]).toEqual(['a', 'b', 'c']);
    expect(answers.map((list) => list.map((i) => i.identifier))).toEqual([
      ['a1@x'],
      ['b1@x', 'b2@x'],
      [],
    ]);
  });
});

describe('against the database', () => {
  const service = useTestService();

  test('twelve contacts with identities cost one statement', async () => {
    const svc = service();
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const made = [];
    for (let i = 0; i < 12; i += 1) {
      made.push(
        await createContactVia(
          svc,
          `Loaded ${i}`,
          [
            { channel: 'email', identifier: `loaded-${i}-${randomUUID()}@example.com` },
            { channel: 'phone', identifier: `+1 555 01${String(i).padStart(2, '0')} 000` },
          ],
          headers,
        ),
      );
    }
    const statements: string[] = [];
    const db = drizzle(svc.db.database.sql, {
      casing: 'snake_case',
      logger: { logQuery: (query) => void statements.push(query) },
    });
    const loaders = contactLoaders(db, workspaceId);
    const answers = await Promise.all(made.map((c) => loaders.identities.load(c.id)));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/from "contact_identities"/);
    expect(answers.map((list) => list.map((i) => i.id))).toEqual(
      made.map((c) => c.identities.map((i) => i.id)),
    );
  });

  test("another workspace's loader sees none of them", async () => {
    const svc = service();
    const { headers } = await freshWorkspaceHeaders(svc);
    const contact = await createContactVia(
      svc,
      'Private',
      [{ channel: 'email', identifier: `p-${randomUUID()}@example.com` }],
      headers,
    );
    const loaders = contactLoaders(svc.db.database.db, svc.workspace.id);
    expect(await loaders.identities.load(contact.id)).toEqual([]);
    expect(await loaders.contacts.load(contact.id)).toBeUndefined();
  });
});
