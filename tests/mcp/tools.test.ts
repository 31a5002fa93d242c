// Agent endpoint (SPEC 4.4, 5, 8.1): POST /api/mcp driven by the MCP SDK's own client over
// HTTP against a running service: the four read-only tools, their ownership rules, the
// 200 cap, and what an expired, revoked, narrowed or missing token gets.
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/client.js';
import { utcToday } from '../../src/mcp/server.js';
import { serviceVersion } from '../../src/meta/version.js';
import type { User } from '../../src/users/tables.js';
import { setWorkspaceDeactivated } from '../../src/workspaces/service.js';
import { CREATE_CONTACT } from '../support/contacts.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
let db: Db;
const open: Client[] = [];

interface Caller {
  user: User;
  token: string;
}

let me: Caller;
let other: Caller;
let grace: { id: string };
let ada: { id: string };
const today = utcToday();

function shift(days: number): string {
  const date = new Date(`${today}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}

async function caller(scopes: string[] | null = null): Promise<Caller> {
  const user = await createUser(db, svc.workspace);
  return { user, token: await tokenFor(db, user, { scopes }) };
}

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/api/mcp', svc.origin), {
    requestInit: { headers: bearer(token) },
    fetch: (url, init) => svc.request(String(url), init),
  });
  await client.connect(transport);
  open.push(client);
  return client;
}

async function call(
  token: string,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  const client = await connect(token);
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The structured answer of a successful call, checked against its JSON text mirror. */
function structured(result: CallToolResult): Record<string, unknown> {
  expect(result.isError).toBeFalsy();
  const [text] = result.content;
  expect(text?.type).toBe('text');
  expect(JSON.parse((text as { text: string }).text)).toEqual(result.structuredContent);
  return result.structuredContent as Record<string, unknown>;
}

function errorText(result: CallToolResult): string {
  expect(result.isError).toBe(true);
  return (result.content[0] as { text: string }).text;
}

async function createContact(
  name: string,
  identities: { channel: string; identifier: string }[],
): Promise<{ id: string }> {
  const { body } = await svc.graph(CREATE_CONTACT, { input: { name, identities } });
  expect(body.errors).toBeUndefined();
  return (body.data as { createContact: { id: string } }).createContact;
}

async function createTask(
  owner: Caller,
  title: string,
  dueOn: string,
  contactId: string | null = null,
): Promise<string> {
  const { body } = await svc.graph(
    `mutation ($input: CreateTaskInput!) { createTask(input: $input) { task { id } } }`,
    { input: { title, dueOn, contactId } },
    bearer(owner.token),
  );
  expect(body.errors).toBeUndefined();
  return (body.data as { createTask: { task: { id: string } } }).createTask.task.id;
}

beforeAll(async () => {
  svc = await startTestService();
  db = svc.db.database.db;
  me = await caller();
  other = await caller();
  grace = await createContact('Grace Hopper', [
    { channel: 'email', identifier: 'grace@example.com' },
    { channel: 'phone', identifier: '+1 555 0100 777' },
  ]);
  ada = await createContact('Ada Lovelace', [{ channel: 'email', identifier: 'ada@example.com' }]);
  await createTask(me, 'Call Grace', today, grace.id);
  await createTask(me, 'Write report', today);
  await createTask(me, 'Send invoice', shift(-3), grace.id);
  await createTask(me, 'Plan next week', shift(1));
  await createTask(other, 'Other: visit Grace', today, grace.id);
  await createTask(other, 'Other: late thing', shift(-1));
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close()));
});

afterAll(() => svc.stop());

describe('tool list', () => {
  test('the server names itself with the service’s version', async () => {
    const client = await connect(me.token);
    expect(client.getServerVersion()).toEqual({ name: 'svc-crm', version: serviceVersion });
  });

  test('four read-only tools, each with input and output schemas and a description', async () => {
    const client = await connect(me.token);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'find_contacts',
      'get_contact',
      'list_my_tasks',
      'workload_summary',
    ]);
    for (const tool of tools) {
      expect(tool.annotations?.readOnlyHint).toBe(true);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      expect((tool.description ?? '').length).toBeGreaterThan(80);
    }
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName.find_contacts?.inputSchema.properties ?? {})).toEqual([
      'query',
      'limit',
    ]);
    expect(byName.find_contacts?.inputSchema.required).toEqual(['query']);
    expect(Object.keys(byName.get_contact?.outputSchema?.properties ?? {})).toEqual(
      expect.arrayContaining(['id', 'name', 'identities', 'open_tasks', 'capped']),
    );
  });
});

describe('tools with real data', () => {
  test("workload_summary counts the owner's open tasks due today and overdue", async () => {
    expect(structured(await call(me.token, 'workload_summary'))).toEqual({
      today,
      due_today: 2,
      overdue: 1,
      capped: false,
    });
    expect(structured(await call(other.token, 'workload_summary'))).toEqual({
      today,
      due_today: 1,
      overdue: 1,
      capped: false,
    });
  });

  test('list_my_tasks lists a day (today by default) with contact names', async () => {
    const todays = structured(await call(me.token, 'list_my_tasks'));
    expect(todays).toMatchObject({ day: today, overdue: false, today, capped: false });
    const tasks = todays.tasks as Record<string, unknown>[];
    expect(tasks.map((task) => task.title).sort()).toEqual(['Call Grace', 'Write report']);
    expect(tasks.find((task) => task.title === 'Call Grace')).toEqual({
      id: expect.any(String),
      title: 'Call Grace',
      due_on: today,
      status: 'open',
      priority: 'normal',
      assignee_id: me.user.id,
      contact_id: grace.id,
      contact_name: 'Grace Hopper',
    });
    expect(tasks.find((task) => task.title === 'Write report')).toMatchObject({
      contact_id: null,
      contact_name: null,
    });
    const tomorrow = structured(await call(me.token, 'list_my_tasks', { day: shift(1) }));
    expect((tomorrow.tasks as { title: string }[]).map((task) => task.title)).toEqual([
      'Plan next week',
    ]);
  });

  test('list_my_tasks with overdue lists the backlog', async () => {
    const backlog = structured(await call(me.token, 'list_my_tasks', { overdue: true }));
    expect(backlog).toMatchObject({ day: null, overdue: true, capped: false });
    expect(backlog.tasks).toEqual([
      expect.objectContaining({
        title: 'Send invoice',
        due_on: shift(-3),
        contact_name: 'Grace Hopper',
        assignee_id: me.user.id,
      }),
    ]);
  });

  test('list_my_tasks refuses day and overdue together, and a malformed day', async () => {
    expect(errorText(await call(me.token, 'list_my_tasks', { day: today, overdue: true }))).toMatch(
      /either `day` or `overdue/,
    );
    const malformed = await call(me.token, 'list_my_tasks', { day: 'tomorrow' });
    expect(malformed.isError).toBe(true);
  });

  test.each([
    ['over 200 characters', 'x'.repeat(201), 'query'],
    ['holding a NUL', 'a\u0000b', 'not valid text'],
  ])('find_contacts refuses a query %s naming its own argument', async (_what, query, named) => {
    const text = errorText(await call(me.token, 'find_contacts', { query }));
    expect(text).toContain(named);
    expect(text).not.toMatch(/\bq\b/);
  });

  test.each(['tomorrow', '2026-02-30', '2026-13-01'])(
    'a day that is no calendar date (%s) is refused naming the tool’s argument, never the operation’s variable',
    async (day) => {
      const text = errorText(await call(me.token, 'list_my_tasks', { day }));
      expect(text).toContain('day');
      expect(text).toContain('a calendar date written YYYY-MM-DD');
      expect(text).not.toContain('$');
    },
  );

  test("another user's tasks never show in workload_summary or list_my_tasks", async () => {
    for (const args of [{}, { overdue: true }, { day: shift(-1) }]) {
      const listed = structured(await call(me.token, 'list_my_tasks', args));
      for (const task of listed.tasks as { title: string; assignee_id: string }[]) {
        expect(task.assignee_id).toBe(me.user.id);
        expect(task.title).not.toMatch(/^Other/);
      }
    }
    const lonely = await caller();
    expect(structured(await call(lonely.token, 'workload_summary'))).toMatchObject({
      due_today: 0,
      overdue: 0,
    });
    expect(structured(await call(lonely.token, 'list_my_tasks'))).toMatchObject({ tasks: [] });
  });

  test('find_contacts marks open work across every user', async () => {
    const lonely = await caller();
    const found = structured(await call(lonely.token, 'find_contacts', { query: 'Hopper' }));
    expect(found).toEqual({
      contacts: [
        {
          id: grace.id,
          name: 'Grace Hopper',
          identities: [
            { channel: 'email', identifier: 'grace@example.com', display_name: null },
            { channel: 'phone', identifier: '+1 555 0100 777', display_name: null },
          ],
          has_open_work: true,
        },
      ],
      has_more: false,
    });
    const byDigits = structured(await call(lonely.token, 'find_contacts', { query: '0100777' }));
    expect((byDigits.contacts as { id: string }[]).map((c) => c.id)).toEqual([grace.id]);
    const adas = structured(await call(lonely.token, 'find_contacts', { query: 'Lovelace' }));
    expect(adas.contacts).toEqual([expect.objectContaining({ id: ada.id, has_open_work: false })]);
  });

  test('find_contacts honours limit and says when more match', async () => {
    const page = structured(await call(me.token, 'find_contacts', { query: 'a', limit: 1 }));
    expect(page.contacts).toHaveLength(1);
    expect(page.has_more).toBe(true);
    // The largest page stays within the graph's complexity limit.
    const widest = structured(await call(me.token, 'find_contacts', { query: 'a', limit: 50 }));
    expect(widest.has_more).toBe(false);
  });

  test('get_contact answers channels and open tasks of every user with assignee_id', async () => {
    const contact = structured(await call(me.token, 'get_contact', { id: grace.id }));
    expect(contact).toMatchObject({ id: grace.id, name: 'Grace Hopper', capped: false });
    expect(contact.identities).toHaveLength(2);
    const tasks = contact.open_tasks as { title: string; assignee_id: string }[];
    expect(tasks.map((task) => [task.title, task.assignee_id]).sort()).toEqual(
      [
        ['Call Grace', me.user.id],
        ['Other: visit Grace', other.user.id],
        ['Send invoice', me.user.id],
      ].sort(),
    );
  });

  test('get_contact of an unknown id is a tool error, not data', async () => {
    const result = await call(me.token, 'get_contact', {
      id: '00000000-0000-4000-8000-000000000000',
    });
    expect(errorText(result)).toBe('contact not found');
    expect(result.structuredContent).toBeUndefined();
  });
});

describe('an erased contact (docs/contacts.md)', () => {
  test('get_contact answers contact not found and find_contacts no longer finds it; the tools are otherwise unchanged', async () => {
    const gone = await createContact('Erin Erased', [
      { channel: 'email', identifier: 'erin@erased.example' },
    ]);
    expect(structured(await call(me.token, 'get_contact', { id: gone.id }))).toMatchObject({
      id: gone.id,
      name: 'Erin Erased',
    });
    const { body } = await svc.graph('mutation ($id: UUID!) { deleteContact(id: $id) { id } }', {
      id: gone.id,
    });
    expect(body.errors).toBeUndefined();
    expect(errorText(await call(me.token, 'get_contact', { id: gone.id }))).toBe(
      'contact not found',
    );
    const found = structured(await call(me.token, 'find_contacts', { query: 'Erin' }));
    expect(JSON.stringify(found)).not.toContain(gone.id);
  });
});

describe('the 200 cap', () => {
  test('counts and lists stop at 200 with capped: true', async () => {
    const busy = await caller();
    await db.execute(
      sql`insert into tasks (workspace_id, title, due_on, assignee_id)
          select ${svc.workspace.id}, 'Backlog ' || n, ${shift(-2)}::date, ${busy.user.id}
          from generate_series(1, 201) as n`,
    );
    expect(structured(await call(busy.token, 'workload_summary'))).toEqual({
      today,
      due_today: 0,
      overdue: 200,
      capped: true,
    });
    const listed = structured(await call(busy.token, 'list_my_tasks', { overdue: true }));
    expect(listed.tasks).toHaveLength(200);
    expect(listed.capped).toBe(true);
  });
});

describe('credentials', () => {
  test('a missing token is refused with 401 before any tool runs', async () => {
    const response = await svc.request(`/api/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'workload_summary', arguments: {} },
      }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await expect(
      client.connect(
        new StreamableHTTPClientTransport(new URL('/api/mcp', svc.origin), {
          fetch: (url, init) => svc.request(String(url), init),
        }),
      ),
    ).rejects.toThrow();
  });

  test('a session cookie is not a credential here', async () => {
    const response = await svc.request(`/api/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: 'anything=1' },
      body: '{}',
    });
    expect(response.status).toBe(401);
  });

  test('an expired token makes every tool answer invalid token', async () => {
    const expiring = await caller();
    await db.execute(
      sql`update api_tokens set expires_at = now() - interval '1 day'
          where user_id = ${expiring.user.id}`,
    );
    const client = await connect(expiring.token);
    expect((await client.listTools()).tools).toHaveLength(4);
    const calls: [string, Record<string, unknown>][] = [
      ['workload_summary', {}],
      ['list_my_tasks', { overdue: true }],
      ['find_contacts', { query: 'Grace' }],
      ['get_contact', { id: grace.id }],
    ];
    for (const [name, args] of calls) {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      expect(errorText(result)).toBe('invalid token');
      expect(result.structuredContent).toBeUndefined();
    }
  });

  test('a revoked token answers invalid token too', async () => {
    const revoked = await caller();
    await db.execute(
      sql`update api_tokens set revoked_at = now() where user_id = ${revoked.user.id}`,
    );
    expect(errorText(await call(revoked.token, 'workload_summary'))).toBe('invalid token');
  });

  test('a token of a deactivated workspace answers invalid token until it is reactivated', async () => {
    const workspace = await createWorkspace(db);
    const user = await createUser(db, workspace);
    const token = await tokenFor(db, user);
    expect((await call(token, 'workload_summary')).isError).toBeFalsy();
    await setWorkspaceDeactivated(db, workspace.id, new Date());
    expect(errorText(await call(token, 'workload_summary'))).toBe('invalid token');
    await setWorkspaceDeactivated(db, workspace.id, null);
    expect((await call(token, 'workload_summary')).isError).toBeFalsy();
  });

  test('a token without tasks:read gets the scope refusal, not data', async () => {
    const narrow = await caller(['contacts:read']);
    for (const [name, args] of [
      ['workload_summary', {}],
      ['list_my_tasks', {}],
    ] as const) {
      const result = await call(narrow.token, name, args);
      expect(errorText(result)).toBe('scope required: tasks:read');
      expect(result.structuredContent).toBeUndefined();
    }
    // contacts:read reaches a contact's tasks (SPEC 5: the check runs where an operation starts).
    expect(structured(await call(narrow.token, 'get_contact', { id: grace.id }))).toMatchObject({
      id: grace.id,
    });
  });

  test('a token without contacts:read gets the scope refusal for the contact tools', async () => {
    const tasksOnly = await caller(['tasks:read']);
    expect(errorText(await call(tasksOnly.token, 'find_contacts', { query: 'Grace' }))).toBe(
      'scope required: contacts:read',
    );
    expect(errorText(await call(tasksOnly.token, 'get_contact', { id: grace.id }))).toBe(
      'scope required: contacts:read',
    );
    expect(structured(await call(tasksOnly.token, 'workload_summary'))).toMatchObject({
      due_today: 0,
    });
  });
});
