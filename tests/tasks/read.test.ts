// Tasks (SPEC 2.4, 2.5, 4.2, 8.1): `task`, the `tasks` connection with its one filter,
// status and paging, `Contact.tasks` across users, and what the complexity limit refuses.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import type { User } from '../../src/users/tables.js';
import { drizzle } from 'drizzle-orm/postgres-js';
import { graphql } from 'graphql';
import { createContext } from '../../src/context.js';
import { buildSchema } from '../../src/graph/schema.js';
import { bearerFor, createTokenUser, createWorkspace } from '../support/factories.js';
import {
  captureLogger,
  startServiceWithDb,
  testConfig,
  type TestService,
} from '../support/service.js';
import {
  CREATE_TASK,
  expectRefusal,
  insertContact,
  TASK,
  TASKS,
  UPDATE_TASK,
} from '../support/tasks.js';

let svc: TestService;
let db: Db;
const schema = buildSchema();

beforeAll(async () => {
  ({ svc, db } = await startServiceWithDb());
});

afterAll(() => svc.stop());

interface Caller {
  user: User;
  headers: Record<string, string>;
}

interface Node {
  id: string;
  title: string;
  dueOn: string | null;
  status: string;
  assigneeId: string;
}

interface Page {
  edges: { cursor: string; node: Node }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

async function member(scopes: string[] | null = null, workspace = svc.workspace): Promise<Caller> {
  return createTokenUser(db, workspace, {}, { scopes });
}

async function createTask(caller: Caller, input: Record<string, unknown>): Promise<Node> {
  const { body } = await svc.graph(CREATE_TASK, { input }, caller.headers);
  expect(body.errors).toBeUndefined();
  return (body.data?.createTask as { task: Node }).task;
}

async function list(caller: Caller, variables: Record<string, unknown>): Promise<Page> {
  const { body } = await svc.graph(TASKS, variables, caller.headers);
  expect(body.errors).toBeUndefined();
  return body.data?.tasks as Page;
}

/** Every page of a list, walked by `endCursor`. */
async function walk(caller: Caller, variables: Record<string, unknown>): Promise<Node[][]> {
  const pages: Node[][] = [];
  let after: string | null = null;
  for (;;) {
    const page = await list(caller, { ...variables, after });
    pages.push(page.edges.map((e) => e.node));
    if (!page.pageInfo.hasNextPage) return pages;
    after = page.pageInfo.endCursor;
  }
}

describe('task', () => {
  test('answers a task of the workspace, also one assigned to a colleague', async () => {
    const owner = await member();
    const colleague = await member();
    const task = await createTask(owner, { title: 'Readable' });
    for (const caller of [owner, colleague]) {
      const { body } = await svc.graph(TASK, { id: task.id }, caller.headers);
      expect(body.data?.task).toEqual(expect.objectContaining({ id: task.id, title: 'Readable' }));
    }
  });

  test('an unknown or other-workspace id is task_not_found', async () => {
    const caller = await member();
    const stranger = await member(null, await createWorkspace(db));
    const foreign = await createTask(stranger, { title: 'Theirs' });
    for (const id of [randomUUID(), foreign.id]) {
      const { body } = await svc.graph(TASK, { id }, caller.headers);
      expectRefusal(body, {
        code: 'NOT_FOUND',
        reason: 'task_not_found',
        message: 'task not found',
      });
    }
  });

  test('loads its contact', async () => {
    const caller = await member();
    const contact = await insertContact(db, svc.workspace, 'Grace Hopper');
    const task = await createTask(caller, { title: 'About Grace', contactId: contact.id });
    const { body } = await svc.graph(
      'query ($id: UUID!) { task(id: $id) { contact { id name } } }',
      { id: task.id },
      caller.headers,
    );
    expect(body.data?.task).toEqual({ contact: { id: contact.id, name: 'Grace Hopper' } });
  });
});

describe('tasks filters', () => {
  const choice = {
    code: 'VALIDATION',
    reason: 'task_filter_choice_required',
    message: 'tasks take exactly one of date, dueBefore or contactId',
  };

  test.each([
    ['no filter', {}],
    ['date and dueBefore', { date: '2025-01-01', dueBefore: '2025-02-01' }],
    ['date and contactId', { date: '2025-01-01', contactId: randomUUID() }],
    ['all three', { date: '2025-01-01', dueBefore: '2025-02-01', contactId: randomUUID() }],
  ])('%s is refused with task_filter_choice_required', async (_name, variables) => {
    const caller = await member();
    const { body } = await svc.graph(TASKS, variables, caller.headers);
    expectRefusal(body, choice);
  });

  test('date lists the tasks due that day, dueBefore those due strictly before', async () => {
    const caller = await member();
    const early = await createTask(caller, { title: 'Early', dueOn: '2025-06-01' });
    const onDay = await createTask(caller, { title: 'On day', dueOn: '2025-06-10' });
    await createTask(caller, { title: 'Later', dueOn: '2025-06-20' });
    await createTask(caller, { title: 'Undated' });
    const day = await list(caller, { date: '2025-06-10' });
    expect(day.edges.map((e) => e.node.id)).toEqual([onDay.id]);
    const before = await list(caller, { dueBefore: '2025-06-10' });
    expect(before.edges.map((e) => e.node.id)).toEqual([early.id]);
  });

  test('contactId lists the caller’s tasks of that contact, undated last', async () => {
    const caller = await member();
    const contact = await insertContact(db, svc.workspace);
    const undated = await createTask(caller, { title: 'Undated', contactId: contact.id });
    const dated = await createTask(caller, {
      title: 'Dated',
      dueOn: '2025-01-01',
      contactId: contact.id,
    });
    await createTask(caller, { title: 'Other contact', dueOn: '2025-01-01' });
    const page = await list(caller, { contactId: contact.id });
    expect(page.edges.map((e) => e.node.id)).toEqual([dated.id, undated.id]);
  });

  test('an unknown or other-workspace contact is contact_not_found', async () => {
    const caller = await member();
    const foreign = await insertContact(db, await createWorkspace(db));
    for (const contactId of [randomUUID(), foreign.id]) {
      const { body } = await svc.graph(TASKS, { contactId }, caller.headers);
      expectRefusal(body, { code: 'NOT_FOUND', reason: 'contact_not_found' });
    }
  });

  test('lists open tasks by default, one status when asked, and every one with all', async () => {
    const caller = await member();
    const day = '2025-07-01';
    const open = await createTask(caller, { title: 'Open', dueOn: day });
    const done = await createTask(caller, { title: 'Done', dueOn: day, status: 'done' });
    const cancelled = await createTask(caller, { title: 'Off', dueOn: day, status: 'cancelled' });
    const ids = async (status?: string) =>
      (await list(caller, { date: day, status })).edges.map((e) => e.node.id).sort();
    expect(await ids()).toEqual([open.id]);
    expect(await ids('open')).toEqual([open.id]);
    expect(await ids('done')).toEqual([done.id]);
    expect(await ids('cancelled')).toEqual([cancelled.id]);
    expect(await ids('all')).toEqual([open.id, done.id, cancelled.id].sort());
  });

  test('an unknown status is refused, naming the statuses and all', async () => {
    const caller = await member();
    const { body } = await svc.graph(TASKS, { date: '2025-01-01', status: 'late' }, caller.headers);
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'task_status_unknown',
      meta: { allowed: ['open', 'done', 'cancelled', 'all'] },
    });
  });

  test('a task is listed to its assignee only', async () => {
    const owner = await member();
    const colleague = await member();
    const day = '2025-08-01';
    const mine = await createTask(owner, { title: 'Mine', dueOn: day });
    const handed = await createTask(owner, {
      title: 'Handed over',
      dueOn: day,
      assigneeId: colleague.user.id,
    });
    expect((await list(owner, { date: day })).edges.map((e) => e.node.id)).toEqual([mine.id]);
    expect((await list(colleague, { date: day })).edges.map((e) => e.node.id)).toEqual([handed.id]);
  });

  test('no task of another workspace is listed', async () => {
    const caller = await member();
    const stranger = await member(null, await createWorkspace(db));
    await createTask(stranger, { title: 'Theirs', dueOn: '2025-09-09' });
    expect((await list(caller, { date: '2025-09-09' })).edges).toEqual([]);
  });
});

describe('tasks times', () => {
  interface Timed extends Node {
    createdAt: string;
    updatedAt: string;
    completedAt: string | null;
  }

  test('a list answers its tasks’ times when asked, by name or through a fragment', async () => {
    const caller = await member();
    const open = await createTask(caller, { title: 'Open', dueOn: '2025-07-01' });
    const done = await createTask(caller, { title: 'Done', dueOn: '2025-07-01' });
    await svc.graph(UPDATE_TASK, { id: done.id, input: { status: 'done' } }, caller.headers);
    const stored = async (id: string) =>
      (await svc.graph(TASK, { id }, caller.headers)).body.data?.task as Timed;
    const times = (task: Timed) => ({
      id: task.id,
      createdAt: task.createdAt,
      updatedAt: task.updatedAt,
      completedAt: task.completedAt,
    });
    // Both due the same day: the list orders them by id.
    const byId = <T extends { id: string }>(list: T[]) =>
      list.sort((a, b) => (a.id < b.id ? -1 : 1));
    const expected = byId([times(await stored(open.id)), times(await stored(done.id))]);
    expect(expected.filter((task) => task.completedAt !== null)).toHaveLength(1);
    const nodes = (data: unknown) =>
      (data as { tasks: { edges: { node: Timed }[] } }).tasks.edges.map((e) => e.node);
    const { body: named } = await svc.graph(
      `{ tasks(date: "2025-07-01", status: "all") {
         edges { node { id createdAt updatedAt completedAt } } } }`,
      {},
      caller.headers,
    );
    expect(nodes(named.data)).toEqual(expected);
    const { body: spread } = await svc.graph(
      `{ tasks(date: "2025-07-01", status: "all") { edges { node { id ...Times } } } }
       fragment Times on Task { completedAt updatedAt createdAt }`,
      {},
      caller.headers,
    );
    expect(nodes(spread.data).map(times)).toEqual(expected);
    const { body: untimed } = await svc.graph(
      '{ tasks(date: "2025-07-01", status: "all") { edges { node { id title } } } }',
      {},
      caller.headers,
    );
    expect(nodes(untimed.data)).toEqual(
      byId([
        { id: open.id, title: 'Open' },
        { id: done.id, title: 'Done' },
      ]),
    );
  });
});

describe('the columns a list of tasks reads', () => {
  const ALL_FIELDS = `id title dueOn status priority contactId assigneeId originSource
    originEventId createdAt updatedAt completedAt`;
  const listOf = (fields: string) =>
    `query ($day: Date) { tasks(date: $day, status: "all") { edges { cursor node { ${fields} } } } }`;
  const nodes = (data: unknown) =>
    (data as { tasks: { edges: { node: Record<string, unknown> }[] } }).tasks.edges.map(
      (e) => e.node,
    );

  test('only the columns of the fields asked, and the same answer as a whole read', async () => {
    const caller = await member();
    const day = '2025-08-08';
    const contact = await insertContact(db, svc.workspace, 'Col Umns');
    await createTask(caller, { title: 'Narrow', dueOn: day, contactId: contact.id });
    await createTask(caller, { title: 'Other', dueOn: day, priority: 'high' });
    const narrow = await runLogged(caller, listOf('id title'), { day });
    expect(narrow.result.errors).toBeUndefined();
    expect(narrow.statements).toHaveLength(1);
    const [listed] = narrow.statements;
    for (const column of ['"title"', '"due_on"', '"id"']) expect(listed).toContain(column);
    for (const column of ['"priority"', '"origin_source"', '"created_at"', '"assignee_id",']) {
      expect(listed?.split(' from ')[0]).not.toContain(column);
    }
    // Every field asked: one statement, the answer of the task read one by one.
    const whole = await runLogged(caller, listOf(ALL_FIELDS), { day });
    expect(whole.result.errors).toBeUndefined();
    expect(whole.statements).toHaveLength(1);
    const listedNodes = nodes(whole.result.data);
    expect(listedNodes).toHaveLength(2);
    for (const node of listedNodes) {
      const { body } = await svc.graph(
        `query ($id: UUID!) { task(id: $id) { ${ALL_FIELDS} } }`,
        { id: node.id },
        caller.headers,
      );
      expect(body.data?.task).toEqual(node);
    }
    const titles = nodes(narrow.result.data).map((node) => node.title);
    expect(titles.sort()).toEqual(['Narrow', 'Other']);
  });

  test('a field asked anywhere in the operation is read, through fragments too', async () => {
    const caller = await member();
    const day = '2025-08-09';
    await createTask(caller, { title: 'Prioritised', dueOn: day, priority: 'high' });
    const { result } = await runLogged(
      caller,
      `query ($day: Date) { tasks(date: $day) { edges { node { id ...More } } } }
       fragment More on Task { priority createdAt }`,
      { day },
    );
    expect(result.errors).toBeUndefined();
    const [node] = nodes(result.data);
    expect(node?.priority).toBe('high');
    expect(typeof node?.createdAt).toBe('string');
  });
});

describe('tasks paging', () => {
  test('walks every task once in due-day, id order and stays stable', async () => {
    const caller = await member();
    const contact = await insertContact(db, svc.workspace);
    const days = ['2025-03-03', '2025-03-01', '2025-03-02', '2025-03-01', '2025-03-03'];
    const made: Node[] = [];
    for (const [i, dueOn] of days.entries()) {
      made.push(await createTask(caller, { title: `T${i}`, dueOn, contactId: contact.id }));
    }
    for (let i = 0; i < 2; i++) {
      made.push(await createTask(caller, { title: `U${i}`, contactId: contact.id }));
    }
    const expected = [...made]
      .sort(
        (a, b) => (a.dueOn ?? '9999').localeCompare(b.dueOn ?? '9999') || a.id.localeCompare(b.id),
      )
      .map((t) => t.id);
    const pages = await walk(caller, { contactId: contact.id, first: 2 });
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2, 1]);
    expect(pages.flat().map((t) => t.id)).toEqual(expected);
    const again = await walk(caller, { contactId: contact.id, first: 2 });
    expect(again).toEqual(pages);
    const before = await walk(caller, { dueBefore: '2025-03-03', first: 1 });
    expect(before.flat().map((t) => t.id)).toEqual(expected.slice(0, 3));
  });

  test('defaults to 50 rows and refuses first outside 1..200', async () => {
    const caller = await member();
    const page = await list(caller, { date: '2025-01-01' });
    expect(page.pageInfo).toEqual({ hasNextPage: false, endCursor: null });
    for (const first of [0, 201]) {
      const { body } = await svc.graph(TASKS, { date: '2025-01-01', first }, caller.headers);
      expectRefusal(body, {
        code: 'VALIDATION',
        reason: 'first_out_of_range',
        meta: { min: 1, max: 200 },
        message: 'graph: first must be between 1 and 200',
      });
    }
  });

  test('a cursor another field issued, or no cursor at all, is cursor_malformed', async () => {
    const caller = await member();
    const users = await svc.graph('{ users(first: 1) { pageInfo { endCursor } } }');
    const foreign = (users.body.data?.users as Page).pageInfo.endCursor as string;
    const forged = Buffer.from(JSON.stringify(['tasks', '', 'not-a-uuid'])).toString('base64url');
    for (const after of [foreign, 'garbage', forged]) {
      const { body } = await svc.graph(TASKS, { date: '2025-01-01', after }, caller.headers);
      expectRefusal(body, { code: 'VALIDATION', reason: 'cursor_malformed' });
    }
  });
});

describe('Contact.tasks', () => {
  const CONTACT_TASKS = `query ($id: UUID!, $first: Int) {
    task(id: $id) { contact { tasks(first: $first) { id title assigneeId status } } }
  }`;

  test('lists the contact’s open tasks across every user with their owner', async () => {
    const ann = await member();
    const bob = await member();
    const contact = await insertContact(db, svc.workspace);
    const a = await createTask(ann, { title: 'Ann’s', contactId: contact.id, dueOn: '2025-01-02' });
    const b = await createTask(bob, { title: 'Bob’s', contactId: contact.id, dueOn: '2025-01-01' });
    const closed = await createTask(bob, { title: 'Closed', contactId: contact.id });
    await svc.graph(UPDATE_TASK, { id: closed.id, input: { status: 'done' } }, bob.headers);
    const { body } = await svc.graph(CONTACT_TASKS, { id: a.id }, ann.headers);
    expect(body.errors).toBeUndefined();
    const tasks = (body.data?.task as { contact: { tasks: Node[] } }).contact.tasks;
    expect(tasks).toEqual([
      { id: b.id, title: 'Bob’s', assigneeId: bob.user.id, status: 'open' },
      { id: a.id, title: 'Ann’s', assigneeId: ann.user.id, status: 'open' },
    ]);
    const one = await svc.graph(CONTACT_TASKS, { id: a.id, first: 1 }, ann.headers);
    const firstOnly = (one.body.data?.task as { contact: { tasks: Node[] } }).contact.tasks;
    expect(firstOnly.map((t) => t.id)).toEqual([b.id]);
  });

  test('batches every contact of a page into one read, each keeping its own tasks', async () => {
    const caller = await member();
    const day = '2025-10-10';
    const contacts = await Promise.all(
      [1, 2, 3].map((i) => insertContact(db, svc.workspace, `C${i}`)),
    );
    for (const contact of contacts) {
      await createTask(caller, { title: contact.name, dueOn: day, contactId: contact.id });
    }
    const { body } = await svc.graph(
      `query ($day: Date) { tasks(date: $day, first: 10) { edges { node { title
        contact { name tasks(first: 5) { title } } } } } }`,
      { day },
      caller.headers,
    );
    expect(body.errors).toBeUndefined();
    const nodes = (body.data?.tasks as { edges: { node: unknown }[] }).edges.map((e) => e.node);
    expect(nodes).toEqual(
      expect.arrayContaining(
        contacts.map((c) => ({
          title: c.name,
          contact: { name: c.name, tasks: [{ title: c.name }] },
        })),
      ),
    );
  });
});

/**
 * Runs `source` as `caller` through the graph, in-process, with a database that records
 * every statement the operation sends.
 */
async function runLogged(caller: Caller, source: string, variableValues: Record<string, unknown>) {
  const statements: string[] = [];
  const logged = drizzle(svc.service.database.sql, {
    casing: 'snake_case',
    logger: { logQuery: (query) => void statements.push(query) },
  });
  const context = createContext({
    config: testConfig(),
    database: { ...svc.service.database, db: logged },
    log: captureLogger().log,
    requestId: 'listed',
    actor: {
      userId: caller.user.id,
      workspaceId: svc.workspace.id,
      role: caller.user.role,
      capabilities: new Set(),
      token: null,
      sessionId: 'listed',
    },
    access: svc.service.access,
    clientAddress: '127.0.0.1',
    headers: new Headers(),
    responseCookies: [],
    signal: new AbortController().signal,
    cancel: () => {},
    events: svc.service.events,
  });
  const result = await graphql({ schema, source, variableValues, contextValue: context });
  return { result, statements };
}

describe('Task.contact in a list of tasks', () => {
  test("reads each task's contact in the list's own statement", async () => {
    const caller = await member();
    const day = '2025-11-11';
    const ada = await insertContact(db, svc.workspace, 'Ada Listed');
    await createTask(caller, { title: 'with', dueOn: day, contactId: ada.id });
    await createTask(caller, { title: 'also with', dueOn: day, contactId: ada.id });
    await createTask(caller, { title: 'without', dueOn: day });
    const { result, statements } = await runLogged(
      caller,
      `query ($day: Date) { tasks(date: $day) { edges { node { title
        contact { id name createdAt } } } } }`,
      { day },
    );
    expect(result.errors).toBeUndefined();
    expect(statements).toHaveLength(1);
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { createdAt } }',
      { id: ada.id },
      caller.headers,
    );
    const stored = body.data?.contact as { createdAt: string };
    const contact = { id: ada.id, name: 'Ada Listed', createdAt: stored.createdAt };
    const nodes = (result.data?.tasks as { edges: { node: { title: string } }[] }).edges.map(
      (edge) => edge.node,
    );
    expect(nodes.sort((a, b) => a.title.localeCompare(b.title))).toEqual([
      { title: 'also with', contact },
      { title: 'with', contact },
      { title: 'without', contact: null },
    ]);
  });

  test('reads it without its times when no field asks for them, with them when one does', async () => {
    const caller = await member();
    const day = '2025-11-12';
    const ada = await insertContact(db, svc.workspace, 'Ada Untimed');
    await createTask(caller, { title: 'about Ada', dueOn: day, contactId: ada.id });
    const brief = await runLogged(
      caller,
      'query ($day: Date) { tasks(date: $day) { edges { node { contact { id name } } } } }',
      { day },
    );
    expect(brief.result.errors).toBeUndefined();
    expect(brief.statements).toHaveLength(1);
    expect(brief.statements[0]).not.toContain('"created_at"');
    const [briefNode] = (
      brief.result.data?.tasks as { edges: { node: { contact: unknown } }[] }
    ).edges.map((edge) => edge.node);
    expect(briefNode?.contact).toEqual({ id: ada.id, name: 'Ada Untimed' });
    // Asked through a fragment elsewhere in the operation: read with the contact, no
    // statement of its own.
    const timed = await runLogged(
      caller,
      `query ($day: Date) { tasks(date: $day) { edges { node { contact { id ...Times } } } } }
       fragment Times on Contact { updatedAt }`,
      { day },
    );
    expect(timed.result.errors).toBeUndefined();
    expect(timed.statements).toHaveLength(1);
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { updatedAt } }',
      { id: ada.id },
      caller.headers,
    );
    const [timedNode] = (
      timed.result.data?.tasks as { edges: { node: { contact: unknown } }[] }
    ).edges.map((edge) => edge.node);
    expect(timedNode?.contact).toEqual({
      id: ada.id,
      updatedAt: (body.data?.contact as { updatedAt: string }).updatedAt,
    });
  });
});

describe('Contact.tasks from the contacts fields', () => {
  test('a token scoped contacts:read reads contact { tasks } without tasks:read', async () => {
    const owner = await member();
    const contact = await insertContact(db, svc.workspace);
    const task = await createTask(owner, { title: 'Via contact', contactId: contact.id });
    const reader = await bearerFor(db, owner.user, { scopes: ['contacts:read'] });
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { tasks { id assigneeId } } }',
      { id: contact.id },
      reader,
    );
    expect(body.errors).toBeUndefined();
    expect(body.data?.contact).toEqual({ tasks: [{ id: task.id, assigneeId: owner.user.id }] });
  });

  test('a page of contacts lists each contact’s own open tasks', async () => {
    const caller = await member();
    const name = `Paged ${randomUUID()}`;
    const contacts = await Promise.all(
      [1, 2].map((i) => insertContact(db, svc.workspace, `${name} ${i}`)),
    );
    for (const contact of contacts) {
      await createTask(caller, { title: contact.name, contactId: contact.id });
    }
    const { body } = await svc.graph(
      'query ($q: String) { contacts(q: $q, first: 10) { edges { node { name tasks(first: 5) { title } } } } }',
      { q: name },
    );
    expect(body.errors).toBeUndefined();
    const nodes = (body.data?.contacts as { edges: { node: unknown }[] }).edges.map((e) => e.node);
    expect(nodes).toEqual(contacts.map((c) => ({ name: c.name, tasks: [{ title: c.name }] })));
  });
});

describe("contact(id) { tasks } in the contact's own statement", () => {
  const EVERY_FIELD = `id title dueOn status priority contactId assigneeId originSource
    originEventId createdAt updatedAt completedAt`;

  /** A contact with three open tasks of two users (one undated) and a done one. */
  async function contactWithTasks() {
    const ann = await member();
    const bob = await member();
    const name = `Read ahead ${randomUUID()}`;
    const contact = await insertContact(db, svc.workspace, name);
    await createTask(ann, { title: 'Undated', contactId: contact.id });
    await createTask(bob, { title: 'Later', contactId: contact.id, dueOn: '2025-03-02' });
    await createTask(ann, { title: 'Sooner', contactId: contact.id, dueOn: '2025-03-01' });
    const done = await createTask(bob, { title: 'Done', contactId: contact.id });
    await svc.graph(UPDATE_TASK, { id: done.id, input: { status: 'done' } }, bob.headers);
    return { contact, name, ann };
  }

  test('answers every field as the page of contacts (each contact a loader read) does', async () => {
    const { contact, name } = await contactWithTasks();
    const one = await svc.graph(
      `query ($id: UUID!) { contact(id: $id) { name tasks(first: 10) { ${EVERY_FIELD} } } }`,
      { id: contact.id },
    );
    const paged = await svc.graph(
      `query ($q: String) { contacts(q: $q, first: 1) { edges { node {
        name tasks(first: 10) { ${EVERY_FIELD} } } } } }`,
      { q: name },
    );
    expect(one.body.errors).toBeUndefined();
    expect(paged.body.errors).toBeUndefined();
    const read = one.body.data?.contact as { tasks: Record<string, unknown>[] };
    expect(read.tasks.map((t) => t['title'])).toEqual(['Sooner', 'Later', 'Undated']);
    const edges = (paged.body.data?.contacts as { edges: { node: unknown }[] }).edges;
    expect(edges.map((e) => e.node)).toEqual([read]);
  });

  test("runs in the contact's statement: with tasks locked, that is the one that waits", async () => {
    const { contact } = await contactWithTasks();
    const holder = await svc.db.database.sql.reserve();
    await holder`begin`;
    await holder`lock table tasks in access exclusive mode`;
    try {
      const answer = svc.graph('query ($id: UUID!) { contact(id: $id) { name tasks { title } } }', {
        id: contact.id,
      });
      const waiting = await waitingStatements(1);
      expect(waiting).toHaveLength(1);
      expect(waiting[0]).toMatch(/from "contacts"/);
      expect(waiting[0]).toMatch(/from "tasks"/);
      await holder`rollback`;
      const { body } = await answer;
      expect(body.errors).toBeUndefined();
      expect(body.data?.contact).toEqual({
        name: contact.name,
        tasks: [{ title: 'Sooner' }, { title: 'Later' }, { title: 'Undated' }],
      });
    } finally {
      await holder`rollback`;
      holder.release();
    }
  });

  test('aliases with their own first each get their own tasks', async () => {
    const { contact } = await contactWithTasks();
    const { body } = await svc.graph(
      `query ($id: UUID!) { contact(id: $id) {
        one: tasks(first: 1) { title } two: tasks(first: 2) { title } all: tasks { title } } }`,
      { id: contact.id },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data?.contact).toEqual({
      one: [{ title: 'Sooner' }],
      two: [{ title: 'Sooner' }, { title: 'Later' }],
      all: [{ title: 'Sooner' }, { title: 'Later' }, { title: 'Undated' }],
    });
  });

  test('a first out of range is refused at the tasks field, the contact still answered', async () => {
    const { contact } = await contactWithTasks();
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { name tasks(first: 0) { title } } }',
      { id: contact.id },
    );
    expect(body.data).toBeNull();
    expect(body.errors?.[0]).toEqual(
      expect.objectContaining({
        path: ['contact', 'tasks'],
        extensions: expect.objectContaining({ reason: 'first_out_of_range' }),
      }),
    );
  });

  test("another workspace's contact is not found, tasks asked or not", async () => {
    const { contact } = await contactWithTasks();
    const stranger = await member(null, await createWorkspace(db));
    const { body } = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { name tasks { title } } }',
      { id: contact.id },
      stranger.headers,
    );
    expectRefusal(body, { code: 'NOT_FOUND', reason: 'contact_not_found' });
  });
});

/** The reads waiting for a lock (other work of the service may wait too), once there are `count`. */
async function waitingStatements(count: number): Promise<string[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const rows = await svc.db.database.sql<{ query: string }[]>`
      select query from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query ilike 'select%'`;
    if (rows.length >= count || Date.now() > deadline) return rows.map((row) => row.query);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('complexity', () => {
  const refused = (body: {
    errors?: { extensions: Record<string, unknown>; message: string }[];
  }) => {
    expect(body.errors?.[0]?.extensions).toEqual(
      expect.objectContaining({ code: 'COMPLEXITY_LIMIT_EXCEEDED' }),
    );
    expect(body.errors?.[0]?.message).toMatch(
      /^operation has complexity \d+, which exceeds the limit of 2500$/,
    );
  };

  test('200 contacts with 200 nested tasks each are refused with the 8.1 message', async () => {
    const { status, body } = await svc.graph(
      '{ contacts(first: 200) { edges { node { tasks(first: 200) { id } } } } }',
    );
    expect(status).toBe(429);
    refused(body);
  });

  test('200 tasks each reaching 200 of their contact’s tasks are refused', async () => {
    const { status, body } = await svc.graph(
      `{ tasks(date: "2025-01-01", first: 200) { edges { node {
        contact { tasks(first: 200) { id } } } } } }`,
    );
    expect(status).toBe(429);
    refused(body);
  });
});

describe('read scope', () => {
  test('a token scoped tasks:read lists and reads; one scoped contacts:read cannot', async () => {
    const owner = await member();
    const task = await createTask(owner, { title: 'Scoped', dueOn: '2025-11-11' });
    const reader = await bearerFor(db, owner.user, { scopes: ['tasks:read'] });
    const other = await bearerFor(db, owner.user, { scopes: ['contacts:read'] });
    const listed = await svc.graph(TASKS, { date: '2025-11-11' }, reader);
    expect((listed.body.data?.tasks as Page).edges.map((e) => e.node.id)).toEqual([task.id]);
    const missing = {
      code: 'UNAUTHORIZED',
      reason: 'scope_missing',
      meta: { scope: 'tasks:read' },
    };
    expectRefusal((await svc.graph(TASKS, { date: '2025-11-11' }, other)).body, missing);
    expectRefusal((await svc.graph(TASK, { id: task.id }, other)).body, missing);
  });
});
