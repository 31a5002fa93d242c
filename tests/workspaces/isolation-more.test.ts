// Workspace isolation, continued from isolation.test.ts: accounts, API tokens, webhooks,
// the note plugin, live events, webhook deliveries and the agent endpoint, with A (the
// test service's admin) and B on one service; then the guard that every id-taking root
// field of the schema has an isolation case (tests/support/isolation.ts lists them).
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'drizzle-orm';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  type IntrospectionQuery,
} from 'graphql';
import type { Db } from '../../src/db/client.js';
import { utcToday } from '../../src/mcp/server.js';
import type { User } from '../../src/users/tables.js';
import type { Workspace } from '../../src/workspaces/tables.js';
import { createContactVia, dataOf, type ContactData } from '../support/contacts.js';
import { repoRoot } from '../support/env.js';
import {
  bearer,
  createUser,
  createWorkspace,
  sessionCookieFor,
  sessionFor,
  tokenFor,
} from '../support/factories.js';
import {
  expectAnsweredAsUnknown,
  ISOLATION_CASES,
  maskId,
  NOT_WORKSPACE_ROWS,
  uuidArguments,
} from '../support/isolation.js';
import { startTestService, type TestService } from '../support/service.js';
import { CREATE_TASK } from '../support/tasks.js';
import { openStream } from '../events/sse.js';
import {
  ACCEPT,
  INVITE,
  invitationsOf,
  ME,
  RESEND,
  SET_DISABLED,
  SET_ROLE,
  tokenOf,
} from '../users/support.js';

const USERS = '{ users(first: 200) { edges { node { id role pending disabled } } } }';
const TOKENS = '{ apiTokens(first: 200) { edges { node { id name revokedAt } } } }';
const REVOKE = 'mutation ($id: UUID!) { apiTokenRevoke(id: $id) { id revokedAt } }';
const CREATE_WEBHOOK = `mutation ($url: String!, $events: [String!]!) {
  createWebhook(url: $url, events: $events) { webhook { id } }
}`;
const WEBHOOKS = `{ webhooks(first: 10) { edges { node { id url events
  deliveries(first: 10) { eventId } } } } }`;
const DELETE_WEBHOOK = 'mutation ($id: UUID!) { deleteWebhook(id: $id) }';
const NOTES = `query ($contactId: UUID!) { notes(contactId: $contactId, first: 200) {
  id contactId body } }`;
const NOTE_CREATE = `mutation ($contactId: UUID!, $body: String!) {
  noteCreate(contactId: $contactId, body: $body) { id contactId body } }`;

interface Hit {
  headers: IncomingHttpHeaders;
  body: { id: string; name: string; data: Record<string, unknown> };
}

/** A webhook receiver on loopback; `next()` resolves with each request in arrival order. */
interface Receiver {
  url: string;
  hits: Hit[];
  next(): Promise<Hit>;
  server: Server;
}

async function receiver(): Promise<Receiver> {
  const hits: Hit[] = [];
  const waiting: ((hit: Hit) => void)[] = [];
  let read = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hit = { headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) };
      hits.push(hit);
      res.writeHead(200).end('ok');
      waiting.shift()?.(hit);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    hits,
    server,
    next() {
      const index = read++;
      const hit = hits[index];
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}

let svc: TestService;
let db: Db;
/** A signed in with a browser session: token management needs one. */
let aSession: { cookie: string };
let bWorkspace: Workspace;
let bAdmin: User;
let bAdminToken: string;
let b: { authorization: string };
let bMember: User;
let bMemberToken: string;
let bMemberCookie: string;
let bPending: { id: string; link: string };
let aContact: ContactData;
let bContact: ContactData;
let bWebhookId: string;
let aReceiver: Receiver;
let bReceiver: Receiver;
const clients: Client[] = [];

beforeAll(async () => {
  // Every stock plugin (the note plugin among them), and webhooks to loopback receivers.
  svc = await startTestService({
    plugins: {},
    env: { SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' },
  });
  db = svc.db.database.db;
  aSession = await sessionFor(db, svc.admin);
  bWorkspace = await createWorkspace(db);
  bAdmin = await createUser(db, bWorkspace, { role: 'admin' });
  bAdminToken = await tokenFor(db, bAdmin, { name: 'B admin token' });
  b = bearer(bAdminToken);
  bMember = await createUser(db, bWorkspace, { role: 'member' });
  bMemberToken = await tokenFor(db, bMember, { name: 'B member token' });
  bMemberCookie = await sessionCookieFor(db, bMember);
  const invited = dataOf<{ user: { id: string }; activationLink: string }>(
    (await svc.graph(INVITE, { email: `pending-${randomUUID()}@example.com`, name: 'Pat' }, b))
      .body,
    'invite',
  );
  bPending = { id: invited.user.id, link: invited.activationLink };
  aContact = await createContactVia(svc, 'Ada in A');
  bContact = await createContactVia(
    svc,
    'Bea Zephyrine',
    [{ channel: 'phone', identifier: '+1 555 0199 321' }],
    b,
  );
  [aReceiver, bReceiver] = await Promise.all([receiver(), receiver()]);
  bWebhookId = dataOf<{ webhook: { id: string } }>(
    (await svc.graph(CREATE_WEBHOOK, { url: bReceiver.url, events: ['contact.created'] }, b)).body,
    'createWebhook',
  ).webhook.id;
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

afterAll(async () => {
  await svc.stop();
  await Promise.all(
    [aReceiver, bReceiver].map(
      (r) => new Promise((resolve) => (r ? r.server.close(resolve) : resolve(undefined))),
    ),
  );
});

/** The ids a workspace's table holds, sorted. */
async function idsIn(table: 'users' | 'notes', workspace: { id: string }): Promise<string[]> {
  const rows = await db.execute<{ id: string }>(
    sql`select id from ${sql.identifier(table)} where workspace_id = ${workspace.id} order by id`,
  );
  return (rows as unknown as { id: string }[]).map((row) => row.id);
}

/** B's accounts as B's admin reads them. */
async function bAccounts() {
  const { body } = await svc.graph(USERS, {}, b);
  return dataOf<{ edges: { node: Record<string, unknown> }[] }>(body, 'users').edges.map(
    (edge) => edge.node,
  );
}

/** The tokens a session lists. */
async function tokensOf(cookie: string) {
  const { body } = await svc.graph(TOKENS, {}, { cookie });
  return dataOf<{ edges: { node: { id: string; name: string; revokedAt: string | null } }[] }>(
    body,
    'apiTokens',
  ).edges.map((edge) => edge.node);
}

async function webhooksOf(headers?: Record<string, string>) {
  const { body } = await svc.graph(WEBHOOKS, {}, headers);
  return dataOf<{
    edges: { node: { id: string; url: string; deliveries: { eventId: string }[] } }[];
  }>(body, 'webhooks').edges.map((edge) => edge.node);
}

async function eventIdAbout(subjectId: string): Promise<string> {
  const rows = await db.execute<{ id: string }>(
    sql`select id from events where subject_id = ${subjectId}`,
  );
  const ids = (rows as unknown as { id: string }[]).map((row) => row.id);
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

describe('another workspace’s ids answer exactly like unknown ids, and change nothing', () => {
  test('resendInvite, setUserDisabled and setUserRole with B’s accounts', async () => {
    const accountsBefore = await bAccounts();
    const invitationsBefore = await invitationsOf(db, { workspaceId: bWorkspace.id, ...bPending });
    expect(invitationsBefore).toHaveLength(1);

    await expectAnsweredAsUnknown(
      svc,
      'resendInvite(userId)',
      RESEND,
      (id) => ({ id }),
      bPending.id,
    );
    // B's member, and B's only admin (whose loss would leave B without a manager).
    for (const target of [bMember.id, bAdmin.id]) {
      await expectAnsweredAsUnknown(
        svc,
        'setUserDisabled(userId)',
        SET_DISABLED,
        (id) => ({ id, disabled: true }),
        target,
      );
      for (const role of ['admin', 'member', '']) {
        await expectAnsweredAsUnknown(
          svc,
          'setUserRole(userId)',
          SET_ROLE,
          (id) => ({ id, role }),
          target,
        );
      }
    }

    // B's accounts are as they were: same roles, still enabled, the invitee still pending.
    expect(await bAccounts()).toEqual(accountsBefore);
    expect(accountsBefore).toEqual(
      expect.arrayContaining([
        { id: bMember.id, role: 'member', pending: false, disabled: false },
        { id: bAdmin.id, role: 'admin', pending: false, disabled: false },
        { id: bPending.id, role: 'member', pending: true, disabled: false },
      ]),
    );
    // The member's token and session still sign in.
    for (const headers of [bearer(bMemberToken), { cookie: bMemberCookie }]) {
      const me = await svc.graph(ME, {}, headers);
      expect(dataOf<{ id: string }>(me.body, 'me').id).toBe(bMember.id);
    }
    // No new invitation link: the original one is the only one, and it still works.
    expect(await invitationsOf(db, { workspaceId: bWorkspace.id, ...bPending })).toEqual(
      invitationsBefore,
    );
    const accepted = await svc.anonymous(ACCEPT, {
      t: tokenOf(bPending.link),
      p: 'a long enough password for Pat',
    });
    expect(accepted.body.errors).toBeUndefined();
    expect(accepted.body.data?.acceptInvitation).toMatchObject({ me: { id: bPending.id } });
  });

  test('apiTokenRevoke with B’s token ids', async () => {
    const bAdminCookie = await sessionCookieFor(db, bAdmin);
    const before = await tokensOf(bAdminCookie);
    const bToken = before.find((token) => token.name === 'B admin token');
    expect(bToken?.revokedAt).toBeNull();
    await expectAnsweredAsUnknown(
      svc,
      'apiTokenRevoke(id)',
      REVOKE,
      (id) => ({ id }),
      bToken?.id as string,
      aSession,
    );
    expect(await tokensOf(bAdminCookie)).toEqual(before);
    // B's token still authenticates.
    const me = await svc.graph(ME, {}, b);
    expect(dataOf<{ id: string }>(me.body, 'me').id).toBe(bAdmin.id);
  });

  test('deleteWebhook with B’s webhook id', async () => {
    const before = await webhooksOf(b);
    expect(before.map((hook) => hook.id)).toContain(bWebhookId);
    await expectAnsweredAsUnknown(
      svc,
      'deleteWebhook(id)',
      DELETE_WEBHOOK,
      (id) => ({ id }),
      bWebhookId,
    );
    expect(await webhooksOf(b)).toEqual(before);
  });

  test('notes(contactId) and noteCreate(contactId) with B’s contact', async () => {
    const bNote = dataOf<{ id: string }>(
      (await svc.graph(NOTE_CREATE, { contactId: bContact.id, body: 'B’s own note' }, b)).body,
      'noteCreate',
    );
    const bNotes = await svc.graph(NOTES, { contactId: bContact.id }, b);
    const aNotesBefore = await idsIn('notes', svc.workspace);
    await expectAnsweredAsUnknown(
      svc,
      'notes(contactId)',
      NOTES,
      (contactId) => ({ contactId }),
      bContact.id,
    );
    await expectAnsweredAsUnknown(
      svc,
      'noteCreate(contactId)',
      NOTE_CREATE,
      (contactId) => ({ contactId, body: 'Planted by A' }),
      bContact.id,
    );
    // No note was written in either workspace.
    expect((await svc.graph(NOTES, { contactId: bContact.id }, b)).body).toEqual(bNotes.body);
    expect(await idsIn('notes', bWorkspace)).toEqual([bNote.id]);
    expect(await idsIn('notes', svc.workspace)).toEqual(aNotesBefore);
  });
});

describe('lists and counts never include another workspace’s rows', () => {
  test('users', async () => {
    const { body } = await svc.graph(USERS);
    const listed = dataOf<{ edges: { node: { id: string } }[] }>(body, 'users').edges.map(
      (edge) => edge.node.id,
    );
    expect(listed.sort()).toEqual(await idsIn('users', svc.workspace));
    for (const id of [bAdmin.id, bMember.id, bPending.id]) expect(listed).not.toContain(id);
  });

  test('apiTokens', async () => {
    const bIds = (await tokensOf(await sessionCookieFor(db, bAdmin))).map((token) => token.id);
    expect(bIds.length).toBeGreaterThan(0);
    const listed = (await tokensOf(aSession.cookie)).map((token) => token.id);
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.filter((id) => bIds.includes(id))).toEqual([]);
  });

  test('webhooks', async () => {
    const own = dataOf<{ webhook: { id: string } }>(
      (await svc.graph(CREATE_WEBHOOK, { url: aReceiver.url, events: ['note.created'] })).body,
      'createWebhook',
    ).webhook.id;
    expect((await webhooksOf()).map((hook) => hook.id)).toEqual([own]);
    expect((await webhooksOf(b)).map((hook) => hook.id)).toEqual([bWebhookId]);
    expect((await svc.graph(DELETE_WEBHOOK, { id: own })).body.data).toEqual({
      deleteWebhook: true,
    });
  });

  test('notes, and Contact.notes through a contact list', async () => {
    const aNote = dataOf<{ id: string }>(
      (await svc.graph(NOTE_CREATE, { contactId: aContact.id, body: 'A’s note' })).body,
      'noteCreate',
    );
    const listed = await svc.graph(NOTES, { contactId: aContact.id });
    expect(dataOf<{ id: string }[]>(listed.body, 'notes').map((note) => note.id)).toEqual([
      aNote.id,
    ]);
    const { body } = await svc.graph(
      '{ contactPage(limit: 10) { items { id notes(first: 10) { id contactId } } } }',
    );
    const items = dataOf<{ items: { id: string; notes: { id: string; contactId: string }[] }[] }>(
      body,
      'contactPage',
    ).items;
    expect(items.map((item) => item.id)).toEqual([aContact.id]);
    expect(items.flatMap((item) => item.notes)).toEqual([{ id: aNote.id, contactId: aContact.id }]);
  });
});

describe('events', () => {
  test('a write in B never arrives on A’s coreEvent stream', async () => {
    const aStream = await openStream(svc, svc.adminHeaders);
    const bStream = await openStream(svc, b);
    try {
      expect([aStream.status, bStream.status]).toEqual([200, 200]);
      // B writes first, then A: were B's event to reach A, A would see it first.
      const bNew = await createContactVia(svc, 'Bea streamed', [], b);
      const aNew = await createContactVia(svc, 'Ada streamed');
      const aFrame = await aStream.next();
      expect(aFrame.data?.coreEvent).toMatchObject({ name: 'contact.created', subjectId: aNew.id });
      const bFrame = await bStream.next();
      expect(bFrame.data?.coreEvent).toMatchObject({ name: 'contact.created', subjectId: bNew.id });
      // And A's write never reaches B: B's next event is B's own next write.
      const bAgain = await createContactVia(svc, 'Bea streamed again', [], b);
      const bNext = await bStream.next();
      expect(bNext.data?.coreEvent).toMatchObject({ subjectId: bAgain.id });
    } finally {
      aStream.close();
      bStream.close();
      await Promise.all([aStream.ended, bStream.ended]);
    }
  });

  test('A’s webhook never gets B’s events', async () => {
    const aWebhookId = dataOf<{ webhook: { id: string } }>(
      (await svc.graph(CREATE_WEBHOOK, { url: aReceiver.url, events: ['contact.created'] })).body,
      'createWebhook',
    ).webhook.id;
    const bNew = await createContactVia(svc, 'Bea hooked', [], b);
    const aNew = await createContactVia(svc, 'Ada hooked');
    const [bEvent, aEvent] = [await eventIdAbout(bNew.id), await eventIdAbout(aNew.id)];
    // Deliveries are written in the event's own transaction: this is already final.
    const aHooks = await webhooksOf();
    expect(aHooks.map((hook) => [hook.id, hook.deliveries])).toEqual([
      [aWebhookId, [{ eventId: aEvent }]],
    ]);
    const bHook = (await webhooksOf(b)).find((hook) => hook.id === bWebhookId);
    expect(bHook?.deliveries.map((d) => d.eventId)).toContain(bEvent);
    expect(bHook?.deliveries.map((d) => d.eventId)).not.toContain(aEvent);
    // A's receiver: its first delivery is A's event.
    const hit = await aReceiver.next();
    expect(hit.headers['x-webhook-id']).toBe(aEvent);
    expect(hit.body).toMatchObject({ id: aEvent, name: 'contact.created' });
    expect(aReceiver.hits.map((h) => h.body.id)).not.toContain(bEvent);
  });
});

describe('the agent endpoint (POST /api/mcp) sees only its own workspace', () => {
  const today = utcToday();
  const yesterday = new Date(Date.parse(`${today}T00:00:00Z`) - 86_400_000)
    .toISOString()
    .slice(0, 10);

  async function call(
    token: string,
    name: string,
    args: Record<string, unknown> = {},
  ): Promise<CallToolResult> {
    const client = new Client({ name: 'isolation-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/api/mcp', svc.origin), {
        requestInit: { headers: bearer(token) },
        fetch: (url, init) => svc.request(String(url), init),
      }),
    );
    clients.push(client);
    return (await client.callTool({ name, arguments: args })) as CallToolResult;
  }

  function structured(result: CallToolResult): Record<string, unknown> {
    expect(result.isError).toBeFalsy();
    return result.structuredContent as Record<string, unknown>;
  }

  async function task(title: string, dueOn: string, headers?: Record<string, string>) {
    const { body } = await svc.graph(CREATE_TASK, { input: { title, dueOn } }, headers);
    return dataOf<{ task: { id: string } }>(body, 'createTask').task.id;
  }

  test('get_contact with B’s contact id answers like an unknown id', async () => {
    const unknownId = randomUUID();
    const foreign = await call(svc.adminToken, 'get_contact', { id: bContact.id });
    const unknown = await call(svc.adminToken, 'get_contact', { id: unknownId });
    expect(foreign.isError).toBe(true);
    expect(maskId(foreign, bContact.id)).toEqual(maskId(unknown, unknownId));
    // B reads it.
    expect(structured(await call(bAdminToken, 'get_contact', { id: bContact.id }))).toMatchObject({
      id: bContact.id,
      name: 'Bea Zephyrine',
    });
  });

  test('find_contacts never finds B’s contacts', async () => {
    for (const query of ['Zephyrine', '0199321']) {
      expect(structured(await call(svc.adminToken, 'find_contacts', { query }))).toEqual({
        contacts: [],
        has_more: false,
      });
      const found = structured(await call(bAdminToken, 'find_contacts', { query }));
      expect((found.contacts as { id: string }[]).map((c) => c.id)).toEqual([bContact.id]);
    }
  });

  test('list_my_tasks and workload_summary never count B’s tasks', async () => {
    const aToday = await task('A due today', today);
    const aLate = await task('A overdue', yesterday);
    for (const [title, due] of [
      ['B due today', today],
      ['B also due today', today],
      ['B overdue', yesterday],
    ] as const) {
      await task(title, due, b);
    }
    expect(structured(await call(svc.adminToken, 'workload_summary'))).toEqual({
      today,
      due_today: 1,
      overdue: 1,
      capped: false,
    });
    expect(structured(await call(bAdminToken, 'workload_summary'))).toEqual({
      today,
      due_today: 2,
      overdue: 1,
      capped: false,
    });
    const todays = structured(await call(svc.adminToken, 'list_my_tasks'));
    expect((todays.tasks as { id: string }[]).map((t) => t.id)).toEqual([aToday]);
    const backlog = structured(await call(svc.adminToken, 'list_my_tasks', { overdue: true }));
    expect((backlog.tasks as { id: string }[]).map((t) => t.id)).toEqual([aLate]);
  });
});

describe('guard: every id-taking root field has an isolation case', () => {
  test('the served schema and graph/schema.graphql name no UUID argument without one', async () => {
    const introspected = await svc.graph(getIntrospectionQuery());
    expect(introspected.body.errors).toBeUndefined();
    const served = buildClientSchema(introspected.body.data as unknown as IntrospectionQuery);
    const generated = buildSchema(
      readFileSync(path.join(repoRoot, 'graph/schema.graphql'), 'utf8'),
    );
    const found = new Set([...uuidArguments(served), ...uuidArguments(generated)]);
    const uncovered = [...found].filter(
      (arg) => !(arg in ISOLATION_CASES) && !NOT_WORKSPACE_ROWS.includes(arg),
    );
    expect(uncovered).toEqual([]);
    // No stale entries: each listed case and exclusion is an argument the schema has.
    expect(
      [...Object.keys(ISOLATION_CASES), ...NOT_WORKSPACE_ROWS].filter((arg) => !found.has(arg)),
    ).toEqual([]);
    // Each case is exercised by name in the file the list points at.
    for (const [arg, file] of Object.entries(ISOLATION_CASES)) {
      const source = readFileSync(path.join(repoRoot, 'tests/workspaces', file), 'utf8');
      expect({ arg, named: source.includes(`'${arg}'`) }).toEqual({ arg, named: true });
    }
  });

  test('the walk finds UUID arguments at any depth of an input object', () => {
    const schema = buildSchema(`
      scalar UUID
      input Inner { ownerId: UUID, note: String }
      input Outer { inner: Inner, ids: [UUID!] }
      type Query { thing(id: UUID!, name: String): Int }
      type Mutation { change(input: Outer!): Int }
    `);
    expect(uuidArguments(schema)).toEqual([
      'change(input.ids)',
      'change(input.inner.ownerId)',
      'thing(id)',
    ]);
  });
});
