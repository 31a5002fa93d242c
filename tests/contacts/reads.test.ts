// Contact reads (SPEC 2.5, 4.2): the `contacts` connection walked by cursor, `contactPage`
// with total, limit, offset, order, orderBy, channels and `q`, each in a workspace of its own.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { asc, eq, sql } from 'drizzle-orm';
import { contacts } from '../../src/contacts/tables.js';
import {
  CONTACT,
  CONTACTS,
  CONTACT_PAGE,
  createContactVia,
  dataOf,
  expectReason,
  freshWorkspaceHeaders,
  type ContactData,
} from '../support/contacts.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(() => svc.stop());

interface Connection {
  edges: { cursor: string; node: { id: string; name: string } }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

interface Page {
  items: { id: string; name: string; identities: { channel: string; identifier: string }[] }[];
  total: number;
  limit: number;
}

/** Ids of a workspace's contacts in the order PostgreSQL sorts them (name, then id). */
async function idsByName(workspaceId: string): Promise<string[]> {
  const rows = await svc.db.database.db
    .select({ id: contacts.id })
    .from(contacts)
    .where(eq(contacts.workspaceId, workspaceId))
    .orderBy(asc(sql`lower(${contacts.name})`), asc(contacts.id));
  return rows.map((r) => r.id);
}

describe('contacts (connection)', () => {
  let headers: Record<string, string>;
  let workspaceId: string;

  beforeAll(async () => {
    ({ headers, workspaceId } = await freshWorkspaceHeaders(svc));
    const names = [
      'Zoe',
      'alice',
      'Alice',
      'ALICE',
      'Bob',
      'bob',
      'Carol',
      'Dan',
      'Erin',
      'Frank',
      'Grace',
      'Heidi',
      'Ivan',
      'Judy',
      'Mallory',
      'Niaj',
      'Olivia',
      'Peggy',
      'Rupert',
      'Sybil',
      'Trent',
      'Victor',
      'Walter',
      'Walter',
      'Émile',
    ];
    for (const name of names) await createContactVia(svc, name, [], headers);
  });

  async function page(first: number, after: string | null, q?: string) {
    const { body } = await svc.graph(CONTACTS, { first, after, q }, headers);
    return dataOf<Connection>(body, 'contacts');
  }

  test('walking with first: 7 visits every contact once, by name then id', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const connection = await page(7, after);
      pages += 1;
      seen.push(...connection.edges.map((e) => e.node.id));
      expect(connection.pageInfo.endCursor).toBe(connection.edges.at(-1)?.cursor ?? null);
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect(pages).toBe(4);
    expect(seen).toEqual(await idsByName(workspaceId));
    expect(new Set(seen).size).toBe(25);
  });

  test('a contact added before the cursor mid-walk neither repeats nor skips a row', async () => {
    const expected = await idsByName(workspaceId);
    const first = await page(7, null);
    await createContactVia(svc, 'Aaron', [], headers);
    const rest: string[] = [];
    let after = first.pageInfo.endCursor;
    for (;;) {
      const connection = await page(7, after);
      rest.push(...connection.edges.map((e) => e.node.id));
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect([...first.edges.map((e) => e.node.id), ...rest]).toEqual(expected);
  });

  test('q narrows the walk', async () => {
    const connection = await page(50, null, 'ALI');
    expect(connection.edges.map((e) => e.node.name.toLowerCase())).toEqual([
      'alice',
      'alice',
      'alice',
    ]);
    expect(connection.pageInfo).toEqual({
      hasNextPage: false,
      endCursor: connection.edges[2]?.cursor,
    });
  });

  test("another field's cursor, or text that is none, is cursor_malformed", async () => {
    const users = await svc.graph(
      'query { users(first: 1) { pageInfo { endCursor } } }',
      {},
      headers,
    );
    const cursor = (users.body.data as { users: Connection }).users.pageInfo.endCursor;
    expect(cursor).toEqual(expect.any(String));
    for (const after of [
      cursor,
      'not a cursor',
      Buffer.from('["contacts",1]').toString('base64url'),
    ]) {
      const { body } = await svc.graph(CONTACTS, { first: 5, after }, headers);
      expectReason(body, 'VALIDATION', 'cursor_malformed');
    }
  });

  test.each([[0], [201]])('first: %d is first_out_of_range', async (first) => {
    const { body } = await svc.graph(CONTACTS, { first }, headers);
    expectReason(body, 'VALIDATION', 'first_out_of_range', { min: 1, max: 200 });
    expect(body.errors?.[0]?.message).toBe('graph: first must be between 1 and 200');
  });
});

describe('contactPage', () => {
  let headers: Record<string, string>;
  const made: Record<string, ContactData> = {};

  beforeAll(async () => {
    ({ headers } = await freshWorkspaceHeaders(svc));
    const rows: [string, { channel: string; identifier: string; displayName?: string }[]][] = [
      ['Ada Byron', [{ channel: 'email', identifier: 'ada@example.com', displayName: 'Countess' }]],
      ['Charles Babbage', [{ channel: 'phone', identifier: '+44 20 7946 0123' }]],
      ['charles darwin', []],
      [
        'Mary Somerville',
        [
          { channel: 'email', identifier: 'mary@example.com' },
          { channel: 'phone', identifier: '+1 555 867 5309', displayName: 'Office line' },
        ],
      ],
      ['Emmy Noether', [{ channel: 'email', identifier: 'emmy@example.com' }]],
      ['100% Gauss', []],
    ];
    // One at a time, so creation order is the order written here.
    for (const [name, identities] of rows) {
      made[name] = await createContactVia(svc, name, identities, headers);
    }
  });

  async function contactPage(variables: Record<string, unknown>): Promise<Page> {
    const { body } = await svc.graph(CONTACT_PAGE, variables, headers);
    return dataOf<Page>(body, 'contactPage');
  }

  const names = (page: Page) => page.items.map((c) => c.name);

  test('defaults: name A to Z, the configured page size, every contact counted', async () => {
    const page = await contactPage({});
    expect(names(page)).toEqual([
      '100% Gauss',
      'Ada Byron',
      'Charles Babbage',
      'charles darwin',
      'Emmy Noether',
      'Mary Somerville',
    ]);
    expect(page.total).toBe(6);
    expect(page.limit).toBe(50);
    expect(page.items[5]?.identities).toEqual([
      { channel: 'email', identifier: 'mary@example.com' },
      { channel: 'phone', identifier: '+1 555 867 5309' },
    ]);
  });

  test('limit and offset walk the pages; the last is where offset + limit reaches total', async () => {
    const all = names(await contactPage({}));
    const walked: string[] = [];
    for (let offset = 0; ; offset += 4) {
      const page = await contactPage({ limit: 4, offset });
      expect(page).toMatchObject({ total: 6, limit: 4 });
      walked.push(...names(page));
      if (offset + page.limit >= page.total) break;
    }
    expect(walked).toEqual(all);
    // Past the end the page is empty and still counts every contact.
    expect(await contactPage({ offset: 10 })).toMatchObject({ items: [], total: 6 });
  });

  test('order DESC reverses; orderBy CREATED_AT follows creation', async () => {
    expect(names(await contactPage({ order: 'DESC', limit: 2 }))).toEqual([
      'Mary Somerville',
      'Emmy Noether',
    ]);
    expect(names(await contactPage({ orderBy: 'CREATED_AT' }))).toEqual(Object.keys(made));
    expect(names(await contactPage({ orderBy: 'CREATED_AT', order: 'DESC' }))).toEqual(
      Object.keys(made).reverse(),
    );
  });

  test('channels keeps contacts with an identity on any named channel', async () => {
    const phone = await contactPage({ channels: ['phone'] });
    expect(names(phone)).toEqual(['Charles Babbage', 'Mary Somerville']);
    expect(phone.total).toBe(2);
    const either = await contactPage({ channels: ['PHONE', 'email'], limit: 1 });
    expect(either).toMatchObject({ total: 4, limit: 1, items: [{ name: 'Ada Byron' }] });
    expect((await contactPage({ channels: ['fax'] })).total).toBe(0);
    expect((await contactPage({ channels: [] })).total).toBe(6);
  });

  test.each([
    ['a name fragment, any case', 'CHARLES', ['Charles Babbage', 'charles darwin']],
    ['an identity display name', 'countess', ['Ada Byron']],
    ['an identity display name fragment', 'office', ['Mary Somerville']],
    ['the digits of a number written with spaces', '2079460123', ['Charles Babbage']],
    ['digits written differently again', '867-53', ['Mary Somerville']],
    ['a literal percent sign', '100%', ['100% Gauss']],
    ['an underscore taken literally (not "any character")', 'a_a', []],
    ['nothing that matches', 'zzz', []],
  ])('q matches %s', async (_what, q, expected) => {
    const page = await contactPage({ q });
    expect(names(page)).toEqual(expected);
    expect(page.total).toBe(expected.length);
  });

  test('q with channels: both apply; total counts every match beyond the page', async () => {
    const page = await contactPage({ q: 'a', channels: ['email'], limit: 1 });
    expect(page.total).toBe(2); // Ada Byron, Mary Somerville (Emmy has no "a")
    expect(names(page)).toEqual(['Ada Byron']);
  });

  test('a filtered page past the last match is empty and still counts every match', async () => {
    expect(await contactPage({ q: 'charles', offset: 2 })).toMatchObject({ items: [], total: 2 });
    expect(await contactPage({ channels: ['phone'], offset: 5 })).toMatchObject({
      items: [],
      total: 2,
    });
    expect(await contactPage({ q: 'zzz', offset: 3 })).toMatchObject({ items: [], total: 0 });
  });

  test('fewer than three digits do not search identifiers', async () => {
    expect((await contactPage({ q: '55' })).total).toBe(0);
  });

  test('a negative offset is refused with offset_negative', async () => {
    const { body } = await svc.graph(CONTACT_PAGE, { offset: -1 }, headers);
    expectReason(body, 'VALIDATION', 'offset_negative');
  });

  test.each([[0], [201]])('limit: %d is first_out_of_range naming limit', async (limit) => {
    const { body } = await svc.graph(CONTACT_PAGE, { limit }, headers);
    expectReason(body, 'VALIDATION', 'first_out_of_range', { min: 1, max: 200 });
    expect(body.errors?.[0]?.message).toBe('graph: limit must be between 1 and 200');
  });

  test('the unfiltered total is the stored count, kept by every create', async () => {
    const other = await freshWorkspaceHeaders(svc);
    const total = async () =>
      dataOf<Page>((await svc.graph(CONTACT_PAGE, {}, other.headers)).body, 'contactPage').total;
    expect(await total()).toBe(0);
    await createContactVia(svc, 'One', [], other.headers);
    await createContactVia(svc, 'Two', [], other.headers);
    expect(await total()).toBe(2);
  });

  test('identities answer every field asked, however little or much the operation asks', async () => {
    const mary = made['Mary Somerville']!;
    const brief = mary.identities.map(({ channel, identifier }) => ({ channel, identifier }));
    const pageOf = (data: Record<string, unknown>) =>
      (data.contactPage as Page).items.find((item) => item.id === mary.id)?.identities;
    // Only channel and identifier: the page reads only those.
    const { body: onlyBrief } = await svc.graph(
      '{ contactPage { items { id identities { channel identifier } } } }',
      {},
      headers,
    );
    expect(pageOf(onlyBrief.data ?? {})).toEqual(brief);
    // The same page beside a contact asking more of its identities, and the page asking
    // more through a fragment: every identity has all it is asked.
    const { body: beside } = await svc.graph(
      `query ($id: UUID!) {
        contactPage { items { id identities { channel identifier } } }
        contact(id: $id) { identities { id channel identifier displayName createdAt } }
      }`,
      { id: mary.id },
      headers,
    );
    expect(pageOf(beside.data ?? {})).toEqual(brief);
    expect(dataOf<ContactData>(beside, 'contact').identities).toEqual(mary.identities);
    const { body: fragment } = await svc.graph(
      `{ contactPage { items { id identities { ...Whole } } } }
       fragment Whole on ContactIdentity { id channel identifier displayName createdAt }`,
      {},
      headers,
    );
    expect(pageOf(fragment.data ?? {})).toEqual(mary.identities);
  });

  test('a page answers its contacts’ times when asked, by name or through a fragment', async () => {
    const ada = made['Ada Byron']!;
    const times = { createdAt: ada.createdAt, updatedAt: ada.updatedAt };
    const itemOf = (data: Record<string, unknown>) =>
      (data.contactPage as { items: Record<string, unknown>[] }).items.find(
        (item) => item.id === ada.id,
      );
    const { body: named } = await svc.graph(
      '{ contactPage { items { id createdAt updatedAt } } }',
      {},
      headers,
    );
    expect(itemOf(named.data ?? {})).toEqual({ id: ada.id, ...times });
    const { body: spread } = await svc.graph(
      `{ contactPage(q: "ada") { items { id ...Times } } }
       fragment Times on Contact { updatedAt createdAt }`,
      {},
      headers,
    );
    expect(itemOf(spread.data ?? {})).toEqual({ id: ada.id, ...times });
  });

  test('contact(id) answers its times when asked, by name, through a fragment or not at all', async () => {
    const ada = made['Ada Byron']!;
    const times = { createdAt: ada.createdAt, updatedAt: ada.updatedAt };
    const one = async (query: string) => {
      const { body } = await svc.graph(query, { id: ada.id }, headers);
      expect(body.errors).toBeUndefined();
      return dataOf<Record<string, unknown>>(body, 'contact');
    };
    expect(await one('query ($id: UUID!) { contact(id: $id) { id name } }')).toEqual({
      id: ada.id,
      name: ada.name,
    });
    expect(await one('query ($id: UUID!) { contact(id: $id) { id createdAt updatedAt } }')).toEqual(
      { id: ada.id, ...times },
    );
    expect(
      await one(`query ($id: UUID!) { contact(id: $id) { id ...Times } }
        fragment Times on Contact { updatedAt createdAt }`),
    ).toEqual({ id: ada.id, ...times });
    expect(
      await one('query ($id: UUID!) { contact(id: $id) { id ... on Contact { createdAt } } }'),
    ).toEqual({ id: ada.id, createdAt: ada.createdAt });
  });

  test('contact answers one contact with its identities', async () => {
    const mary = made['Mary Somerville']!;
    const { body } = await svc.graph(CONTACT, { id: mary.id }, headers);
    expect(dataOf<ContactData>(body, 'contact')).toEqual(mary);
  });
});
