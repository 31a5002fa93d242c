// Tasks (SPEC 2.4, 3, 4.2): createTask with its replay, origin and input rules, and
// updateTask with the statuses and priorities docs/decisions.md lists.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import type { User } from '../../src/users/tables.js';
import {
  bearerFor,
  createTokenUser,
  createUser,
  createWorkspace,
  sessionFor,
} from '../support/factories.js';
import { startServiceWithDb, type TestService } from '../support/service.js';
import {
  CREATE_TASK,
  eventsAbout,
  expectRefusal,
  insertContact,
  storedTasks,
  UPDATE_TASK,
} from '../support/tasks.js';

let svc: TestService;
let db: Db;

beforeAll(async () => {
  ({ svc, db } = await startServiceWithDb());
});

afterAll(() => svc.stop());

interface TaskData {
  id: string;
  title: string;
  dueOn: string | null;
  status: string;
  priority: string;
  contactId: string | null;
  assigneeId: string;
  originSource: string | null;
  originEventId: string | null;
  completedAt: string | null;
  updatedAt: string;
}

/** A member of the test workspace and headers signing in as them by token. */
async function member(
  scopes: string[] | null = null,
  name?: string,
): Promise<{ user: User; headers: Record<string, string> }> {
  return createTokenUser(db, svc.workspace, {}, { scopes, name });
}

async function create(input: Record<string, unknown>, headers: Record<string, string>) {
  const { body } = await svc.graph(CREATE_TASK, { input }, headers);
  return body;
}

async function created(
  input: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<TaskData> {
  const body = await create(input, headers);
  expect(body.errors).toBeUndefined();
  return (body.data?.createTask as { task: TaskData }).task;
}

describe('createTask', () => {
  test('creates an open, normal task assigned to the caller with no origin', async () => {
    const { user, headers } = await member();
    const body = await create({ title: '  Call Ada  ', dueOn: '2025-03-04' }, headers);
    expect(body.errors).toBeUndefined();
    const result = body.data?.createTask as { replay: boolean; task: TaskData };
    expect(result.replay).toBe(false);
    expect(result.task).toEqual(
      expect.objectContaining({
        title: 'Call Ada',
        dueOn: '2025-03-04',
        status: 'open',
        priority: 'normal',
        contactId: null,
        assigneeId: user.id,
        originEventId: null,
        completedAt: null,
      }),
    );
  });

  test('a token records token:<name> as the origin source, whatever the input says', async () => {
    const { headers } = await member(null, 'zapier');
    const task = await created({ title: 'From a token', originSource: 'crm-sync' }, headers);
    expect(task.originSource).toBe('token:zapier');
  });

  test('a session keeps the origin source it names', async () => {
    const cookie = await sessionFor(db, await createUser(db, svc.workspace));
    const task = await created(
      { title: 'Imported', originSource: 'calendar', originEventId: 'evt-1' },
      cookie,
    );
    expect(task).toEqual(
      expect.objectContaining({ originSource: 'calendar', originEventId: 'evt-1' }),
    );
  });

  test('a session naming an origin event without a source is refused', async () => {
    const cookie = await sessionFor(db, await createUser(db, svc.workspace));
    const before = (await storedTasks(db, svc.workspace)).length;
    const body = await create({ title: 'Orphan event', originEventId: 'evt-2' }, cookie);
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'origin_source_required',
      message: 'an origin event needs a source',
    });
    expect(await storedTasks(db, svc.workspace)).toHaveLength(before);
  });

  test('a second create with the same origin event answers the stored task as a replay', async () => {
    const { headers } = await member(null, 'replayer');
    const first = await create({ title: 'Once', originEventId: 'evt-replay' }, headers);
    const second = await create(
      { title: 'Twice, differently', priority: 'urgent', originEventId: 'evt-replay' },
      headers,
    );
    const a = first.data?.createTask as { replay: boolean; task: TaskData };
    const b = second.data?.createTask as { replay: boolean; task: TaskData };
    expect(a.replay).toBe(false);
    expect(b).toEqual({ replay: true, task: a.task });
    const rows = (await storedTasks(db, svc.workspace)).filter(
      (r) => r.origin_event_id === 'evt-replay',
    );
    expect(rows).toHaveLength(1);
    expect(await eventsAbout(db, a.task.id)).toHaveLength(1);
  });

  test('two creates racing with the same origin event leave one row and one replay', async () => {
    const { headers } = await member(null, 'racer');
    const eventId = `evt-${randomUUID()}`;
    const bodies = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        create({ title: `Race ${i}`, originEventId: eventId }, headers),
      ),
    );
    const results = bodies.map((b) => {
      expect(b.errors).toBeUndefined();
      return b.data?.createTask as { replay: boolean; task: TaskData };
    });
    expect(results.filter((r) => !r.replay)).toHaveLength(1);
    expect(new Set(results.map((r) => r.task.id)).size).toBe(1);
    const rows = (await storedTasks(db, svc.workspace)).filter(
      (r) => r.origin_event_id === eventId,
    );
    expect(rows).toHaveLength(1);
  });

  test('the same origin event from two different tokens makes two tasks', async () => {
    const one = await member(null, 'source-one');
    const two = await member(null, 'source-two');
    const a = await created({ title: 'A', originEventId: 'shared-evt' }, one.headers);
    const b = await created({ title: 'B', originEventId: 'shared-evt' }, two.headers);
    expect(a.id).not.toBe(b.id);
  });

  test('a blank title is refused', async () => {
    const { headers } = await member();
    expectRefusal(await create({ title: '   ' }, headers), {
      code: 'VALIDATION',
      reason: 'task_title_required',
      message: 'a task needs a title',
    });
  });

  test('an unknown priority is refused, naming the priorities', async () => {
    const { headers } = await member();
    expectRefusal(await create({ title: 'T', priority: 'asap' }, headers), {
      code: 'VALIDATION',
      reason: 'task_priority_unknown',
      meta: { allowed: ['low', 'normal', 'high', 'urgent'] },
    });
  });

  test('an unknown status is refused, naming the statuses', async () => {
    const { headers } = await member();
    expectRefusal(await create({ title: 'T', status: 'later' }, headers), {
      code: 'VALIDATION',
      reason: 'task_status_unknown',
      meta: { allowed: ['open', 'done', 'cancelled'] },
    });
  });

  test('a task created done is stamped completed', async () => {
    const { headers } = await member();
    const task = await created({ title: 'Already done', status: 'done' }, headers);
    expect(task.completedAt).not.toBeNull();
  });

  test('links a contact of the workspace and may assign a colleague', async () => {
    const { headers } = await member();
    const colleague = await createUser(db, svc.workspace);
    const contact = await insertContact(db, svc.workspace);
    const task = await created(
      { title: 'Linked', contactId: contact.id, assigneeId: colleague.id, priority: 'high' },
      headers,
    );
    expect(task).toEqual(
      expect.objectContaining({
        contactId: contact.id,
        assigneeId: colleague.id,
        priority: 'high',
      }),
    );
  });

  test('an unknown or other-workspace contact is contact_not_found', async () => {
    const { headers } = await member();
    const elsewhere = await createWorkspace(db);
    const foreign = await insertContact(db, elsewhere);
    for (const contactId of [randomUUID(), foreign.id]) {
      expectRefusal(await create({ title: 'T', contactId }, headers), {
        code: 'NOT_FOUND',
        reason: 'contact_not_found',
      });
    }
  });

  test('an unknown or other-workspace assignee is user_not_found', async () => {
    const { headers } = await member();
    const elsewhere = await createWorkspace(db);
    const stranger = await createUser(db, elsewhere);
    for (const assigneeId of [randomUUID(), stranger.id]) {
      expectRefusal(await create({ title: 'T', assigneeId }, headers), {
        code: 'NOT_FOUND',
        reason: 'user_not_found',
      });
    }
  });

  test('records task.created for the assignee alone', async () => {
    const { user, headers } = await member();
    const colleague = await createUser(db, svc.workspace);
    const task = await created({ title: 'Evented', assigneeId: colleague.id }, headers);
    expect(await eventsAbout(db, task.id)).toEqual([
      expect.objectContaining({ name: 'task.created', audience_user_id: colleague.id }),
    ]);
    expect(user.id).not.toBe(colleague.id);
  });
});

describe('updateTask', () => {
  test('changes the fields given and leaves the rest', async () => {
    const { headers } = await member();
    const contact = await insertContact(db, svc.workspace);
    const task = await created(
      { title: 'Draft', dueOn: '2025-05-01', contactId: contact.id },
      headers,
    );
    const { body } = await svc.graph(
      UPDATE_TASK,
      { id: task.id, input: { title: 'Final', priority: 'low' } },
      headers,
    );
    expect(body.data?.updateTask).toEqual(
      expect.objectContaining({
        title: 'Final',
        priority: 'low',
        dueOn: '2025-05-01',
        contactId: contact.id,
      }),
    );
  });

  test('null clears the due day and the contact', async () => {
    const { headers } = await member();
    const contact = await insertContact(db, svc.workspace);
    const task = await created(
      { title: 'Clear me', dueOn: '2025-05-01', contactId: contact.id },
      headers,
    );
    const { body } = await svc.graph(
      UPDATE_TASK,
      { id: task.id, input: { dueOn: null, contactId: null } },
      headers,
    );
    expect(body.data?.updateTask).toEqual(
      expect.objectContaining({ dueOn: null, contactId: null, title: 'Clear me' }),
    );
  });

  test('done stamps completedAt and reopening clears it, with events for the assignee', async () => {
    const { user, headers } = await member();
    const task = await created({ title: 'Finish' }, headers);
    const done = await svc.graph(UPDATE_TASK, { id: task.id, input: { status: 'done' } }, headers);
    const doneTask = done.body.data?.updateTask as TaskData;
    expect(doneTask.status).toBe('done');
    expect(doneTask.completedAt).not.toBeNull();
    const reopened = await svc.graph(
      UPDATE_TASK,
      { id: task.id, input: { status: 'open' } },
      headers,
    );
    expect(reopened.body.data?.updateTask).toEqual(
      expect.objectContaining({ status: 'open', completedAt: null }),
    );
    const cancelled = await svc.graph(
      UPDATE_TASK,
      { id: task.id, input: { status: 'cancelled' } },
      headers,
    );
    expect(cancelled.body.data?.updateTask).toEqual(
      expect.objectContaining({ status: 'cancelled', completedAt: null }),
    );
    const events = await eventsAbout(db, task.id);
    expect(events.map((e) => e.name).sort()).toEqual(
      ['task.completed', 'task.created', 'task.updated', 'task.updated', 'task.updated'].sort(),
    );
    expect(events.every((e) => e.audience_user_id === user.id)).toBe(true);
  });

  test('handing a task over tells both the new and the previous assignee', async () => {
    const { user, headers } = await member();
    const colleague = await createUser(db, svc.workspace);
    const task = await created({ title: 'Hand over' }, headers);
    const { body } = await svc.graph(
      UPDATE_TASK,
      { id: task.id, input: { assigneeId: colleague.id } },
      headers,
    );
    expect((body.data?.updateTask as TaskData).assigneeId).toBe(colleague.id);
    const updates = (await eventsAbout(db, task.id)).filter((e) => e.name === 'task.updated');
    expect(updates.map((e) => e.audience_user_id).sort()).toEqual([user.id, colleague.id].sort());
  });

  test.each([
    [{ title: '' }, 'VALIDATION', 'task_title_required'],
    [{ title: null }, 'VALIDATION', 'task_title_required'],
    [{ priority: 'someday' }, 'VALIDATION', 'task_priority_unknown'],
    [{ status: 'archived' }, 'VALIDATION', 'task_status_unknown'],
    [{ contactId: randomUUID() }, 'NOT_FOUND', 'contact_not_found'],
    [{ assigneeId: randomUUID() }, 'NOT_FOUND', 'user_not_found'],
  ])('refuses %j with %s %s and changes nothing', async (input, code, reason) => {
    const { headers } = await member();
    const task = await created({ title: 'Unchanged' }, headers);
    const { body } = await svc.graph(UPDATE_TASK, { id: task.id, input }, headers);
    expect(body.errors?.[0]?.extensions).toEqual(expect.objectContaining({ code, reason }));
    expect(body.data).toBeNull();
    const [row] = (await storedTasks(db, svc.workspace)).filter((r) => r.id === task.id);
    expect(row).toEqual(expect.objectContaining({ title: 'Unchanged', status: 'open' }));
  });

  test('an unknown or other-workspace task is task_not_found', async () => {
    const { headers } = await member();
    const stranger = await createTokenUser(db, await createWorkspace(db));
    const foreign = await svc.graph(CREATE_TASK, { input: { title: 'Theirs' } }, stranger.headers);
    const foreignId = (foreign.body.data?.createTask as { task: TaskData }).task.id;
    for (const id of [randomUUID(), foreignId]) {
      const { body } = await svc.graph(UPDATE_TASK, { id, input: { title: 'Mine' } }, headers);
      expectRefusal(body, { code: 'NOT_FOUND', reason: 'task_not_found' });
    }
  });
});

describe('write scope', () => {
  test('a token without tasks:write cannot create or update', async () => {
    const writer = await member();
    const task = await created({ title: 'Guarded' }, writer.headers);
    const reader = await bearerFor(db, writer.user, { scopes: ['tasks:read'] });
    const missing = {
      code: 'UNAUTHORIZED',
      reason: 'scope_missing',
      meta: { scope: 'tasks:write' },
    };
    expectRefusal(await create({ title: 'No' }, reader), missing);
    const { body } = await svc.graph(UPDATE_TASK, { id: task.id, input: { title: 'No' } }, reader);
    expectRefusal(body, missing);
  });

  test('a token scoped tasks:write creates', async () => {
    const name = `writer ${randomUUID()}`;
    const { user, headers } = await member(['tasks:write'], name);
    const task = await created({ title: 'Allowed' }, headers);
    expect(task).toMatchObject({
      title: 'Allowed',
      status: 'open',
      assigneeId: user.id,
      originSource: `token:${name}`,
    });
    const stored = await storedTasks(db, svc.workspace);
    expect(stored.filter((row) => row.id === task.id)).toEqual([
      expect.objectContaining({ title: 'Allowed', assignee_id: user.id }),
    ]);
  });

  test('an anonymous caller is refused', async () => {
    const { body } = await svc.anonymous(CREATE_TASK, { input: { title: 'Anon' } });
    expectRefusal(body, { code: 'UNAUTHENTICATED', reason: 'authentication_required' });
  });
});
