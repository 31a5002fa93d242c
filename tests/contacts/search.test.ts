// `q` reads contact_search (docs/performance.md, "Instant search"), which triggers keep in
// the statement of every write that changes what a contact is found by: each write path
// below is searched right after it answers, and another workspace's contacts never match.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { and, eq } from 'drizzle-orm';
import { contactSearch } from '../../src/contacts/tables.js';
import {
  ADD_IDENTITY,
  CONTACT_PAGE,
  CONTACTS,
  DELETE_IDENTITY,
  RENAME_CONTACT,
  createContactVia,
  dataOf,
  freshWorkspaceHeaders,
  type ContactData,
} from '../support/contacts.js';
import { startTestService, type TestService } from '../support/service.js';
import { mapAndCommit, uploadFile } from '../plugins/importer/support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

interface Page {
  items: { id: string; name: string }[];
  total: number;
}

interface Connection {
  edges: { node: { id: string; name: string } }[];
}

/** Names `q` finds on the workspace's first page, checked against its total. */
async function found(headers: Record<string, string>, q: string): Promise<string[]> {
  const page = dataOf<Page>((await svc.graph(CONTACT_PAGE, { q }, headers)).body, 'contactPage');
  expect(page.total).toBe(page.items.length);
  return page.items.map((item) => item.name);
}

const MERGE = `mutation ($targetId: UUID!, $sourceIds: [UUID!]!) {
  mergeContacts(targetId: $targetId, sourceIds: $sourceIds) { contact { id } mergedIds }
}`;
const DELETE_CONTACT = `mutation ($id: UUID!) { deleteContact(id: $id) { id } }`;

describe('q finds what each write left, right after it', () => {
  let headers: Record<string, string>;

  beforeAll(async () => {
    ({ headers } = await freshWorkspaceHeaders(svc));
  });

  test('a created contact by its name, its display names and its numbers’ digits', async () => {
    await createContactVia(
      svc,
      'Quillon Ambry',
      [
        { channel: 'email', identifier: 'qa@example.com', displayName: 'Captain Q' },
        { channel: 'phone', identifier: '+44 20 7946 7311' },
      ],
      headers,
    );
    expect(await found(headers, 'quillon')).toEqual(['Quillon Ambry']);
    expect(await found(headers, 'CAPTAIN')).toEqual(['Quillon Ambry']);
    expect(await found(headers, '794-67')).toEqual(['Quillon Ambry']);
    // Short fragments read every row, and still only what matches.
    expect(await found(headers, 'qu')).toEqual(['Quillon Ambry']);
  });

  test('a rename: the new name matches, the old one no longer', async () => {
    const made = await createContactVia(svc, 'Rastor Vell', [], headers);
    dataOf(
      (await svc.graph(RENAME_CONTACT, { id: made.id, name: 'Rostam Vell' }, headers)).body,
      'renameContact',
    );
    expect(await found(headers, 'rastor')).toEqual([]);
    expect(await found(headers, 'rostam')).toEqual(['Rostam Vell']);
  });

  test('an identity added, then deleted', async () => {
    const made = await createContactVia(svc, 'Solvey Brand', [], headers);
    const added = dataOf<{ identity: { id: string } }>(
      (
        await svc.graph(
          ADD_IDENTITY,
          {
            contactId: made.id,
            identity: { channel: 'phone', identifier: '0161 496 0832', displayName: 'Sol office' },
          },
          headers,
        )
      ).body,
      'addContactIdentity',
    );
    expect(await found(headers, 'sol office')).toEqual(['Solvey Brand']);
    expect(await found(headers, '4960832')).toEqual(['Solvey Brand']);
    dataOf(
      (await svc.graph(DELETE_IDENTITY, { id: added.identity.id }, headers)).body,
      'deleteContactIdentity',
    );
    expect(await found(headers, 'sol office')).toEqual([]);
    expect(await found(headers, '4960832')).toEqual([]);
    expect(await found(headers, 'solvey')).toEqual(['Solvey Brand']);
  });

  test('a merge: the target found by what the source held, the source by nothing', async () => {
    const target = await createContactVia(svc, 'Tamsin Orle', [], headers);
    const source = await createContactVia(
      svc,
      'Tamsin O',
      [{ channel: 'email', identifier: 'tamsin@orle.example', displayName: 'Orle Works' }],
      headers,
    );
    const merged = dataOf<{ mergedIds: string[] }>(
      (await svc.graph(MERGE, { targetId: target.id, sourceIds: [source.id] }, headers)).body,
      'mergeContacts',
    );
    expect(merged.mergedIds).toEqual([source.id]);
    expect(await found(headers, 'orle works')).toEqual(['Tamsin Orle']);
    expect(await found(headers, 'tamsin')).toEqual(['Tamsin Orle']);
  });

  test('an erasure: nothing of the contact is found', async () => {
    const made = await createContactVia(
      svc,
      'Ulrike Paxe',
      [{ channel: 'phone', identifier: '+1 (555) 019-2288', displayName: 'Ulli' }],
      headers,
    );
    dataOf((await svc.graph(DELETE_CONTACT, { id: made.id }, headers)).body, 'deleteContact');
    expect(await found(headers, 'paxe')).toEqual([]);
    expect(await found(headers, 'ulli')).toEqual([]);
    expect(await found(headers, '0192288')).toEqual([]);
    const rows = await svc.db.database.db
      .select()
      .from(contactSearch)
      .where(eq(contactSearch.contactId, made.id));
    expect(rows).toEqual([]);
  });

  test('an import’s commit: every row found by name and by number', async () => {
    const upload = await uploadFile(
      svc,
      'name,email,phone\nVesna Kord,vesna@kord.example,+44 20 7946 5521\nWolfram Kord,wk@kord.example,\n',
      'kord.csv',
      headers,
    );
    const id = dataOf<{ id: string }>(upload.body, 'importUpload').id;
    const mapping = [
      { column: 0, target: 'name' },
      { column: 1, target: 'identity:email' },
      { column: 2, target: 'identity:phone' },
    ];
    expect(await mapAndCommit(svc, id, mapping, headers)).toBe(2);
    expect(await found(headers, 'kord')).toEqual(['Vesna Kord', 'Wolfram Kord']);
    expect(await found(headers, '7946552')).toEqual(['Vesna Kord']);
  });

  test('the keyset walk and a filtered page read the same matches', async () => {
    const walked = dataOf<Connection>(
      (await svc.graph(CONTACTS, { q: 'kord' }, headers)).body,
      'contacts',
    );
    expect(walked.edges.map((edge) => edge.node.name)).toEqual(['Vesna Kord', 'Wolfram Kord']);
    // One at a time: the cursor of a search's walk resumes it.
    const first = dataOf<Connection & { pageInfo: { endCursor: string } }>(
      (await svc.graph(CONTACTS, { q: 'kord', first: 1 }, headers)).body,
      'contacts',
    );
    const next = dataOf<Connection>(
      (await svc.graph(CONTACTS, { q: 'kord', first: 1, after: first.pageInfo.endCursor }, headers))
        .body,
      'contacts',
    );
    expect([...first.edges, ...next.edges].map((edge) => edge.node.name)).toEqual([
      'Vesna Kord',
      'Wolfram Kord',
    ]);
    const page = dataOf<Page>(
      (await svc.graph(CONTACT_PAGE, { q: 'kord', orderBy: 'CREATED_AT', order: 'DESC' }, headers))
        .body,
      'contactPage',
    );
    expect(page.total).toBe(2);
    expect(page.items.map((item) => item.name).sort()).toEqual(['Vesna Kord', 'Wolfram Kord']);
  });
});

/** Waits until a statement of this database waits for another transaction's lock. */
async function waitingForLock(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [row] = await svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    if ((row?.n ?? 0) > 0) return;
  }
  throw new Error('no statement waited for a lock');
}

describe('what q matches', () => {
  test('another workspace’s contacts never match, whatever they share', async () => {
    const mine = await freshWorkspaceHeaders(svc);
    const theirs = await freshWorkspaceHeaders(svc);
    const identity = { channel: 'phone', identifier: '+44 20 7946 3390', displayName: 'Xan desk' };
    const ours = await createContactVia(svc, 'Xanthe Lusk', [identity], mine.headers);
    await createContactVia(svc, 'Xanthe Lusk', [identity], theirs.headers);
    for (const q of ['xanthe', 'xan desk', '79463390', 'xa']) {
      const page = dataOf<Page>(
        (await svc.graph(CONTACT_PAGE, { q }, mine.headers)).body,
        'contactPage',
      );
      expect(page).toEqual({
        items: [expect.objectContaining({ id: ours.id })],
        total: 1,
        limit: 50,
      });
    }
  });

  test('a fragment never runs from one display name into the next', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    await createContactVia(
      svc,
      'Yannick Bro',
      [
        { channel: 'email', identifier: 'y1@bro.example', displayName: 'north' },
        { channel: 'email', identifier: 'y2@bro.example', displayName: 'south' },
      ],
      headers,
    );
    expect(await found(headers, 'north\nsouth')).toEqual([]);
    // Nor from the name into the display names.
    expect(await found(headers, 'bro\nnorth')).toEqual([]);
    expect(await found(headers, 'rth')).toEqual(['Yannick Bro']);
  });

  test('two transactions adding identities to one contact: its row holds both', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const made: ContactData = await createContactVia(svc, 'Zofia Crane', [], headers);
    const { sql } = svc.db.database;
    const add = (identifier: string, displayName: string) => async (tx: typeof sql) => {
      await tx`insert into contact_identities
        (workspace_id, contact_id, channel, identifier, identifier_key, display_name)
        values (${workspaceId}, ${made.id}, 'email', ${identifier}, ${identifier}, ${displayName})`;
    };
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const first = new Promise<void>((resolve) => (inserted = resolve));
    const one = sql.begin(async (tx) => {
      await add('a@crane.example', 'first desk')(tx as unknown as typeof sql);
      inserted();
      await held;
    });
    await first;
    // The second waits for the first's lock on the contact's search row, then reads anew.
    const two = sql.begin((tx) =>
      add('b@crane.example', 'second desk')(tx as unknown as typeof sql),
    );
    await waitingForLock();
    release();
    await Promise.all([one, two]);
    const [row] = await svc.db.database.db
      .select({ names: contactSearch.names })
      .from(contactSearch)
      .where(and(eq(contactSearch.workspaceId, workspaceId), eq(contactSearch.contactId, made.id)));
    expect(row?.names.split('\n').sort()).toEqual(['first desk', 'second desk']);
  });
});
