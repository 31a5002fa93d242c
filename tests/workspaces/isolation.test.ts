// Two workspaces on one service: A (the test service's admin) and B. Every id of B's
// answers A exactly as an id that does not exist, nothing of B's changes, and A's lists
// never show B's rows. Contacts and tasks here; accounts, tokens, webhooks, notes, events
// and the agent endpoint in isolation-more.test.ts, with the guard that every id-taking
// root field has a case.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'drizzle-orm';
import {
  ADD_IDENTITY,
  CONTACT,
  CONTACT_PAGE,
  CONTACTS,
  createContactVia,
  DELETE_IDENTITY,
  dataOf,
  expectReason,
  freshWorkspaceHeaders,
  RENAME_CONTACT,
  type ContactData,
} from '../support/contacts.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';
import { startTestService, type TestService } from '../support/service.js';
import { CREATE_TASK, TASK, TASK_FIELDS, TASKS, UPDATE_TASK } from '../support/tasks.js';

let svc: TestService;
let other: Record<string, string>;
let bWorkspaceId: string;
let bAdminId: string;
let bContact: ContactData;
let bTaskId: string;
let aContact: ContactData;
let aTask: Record<string, unknown>;

const identity = { channel: 'email', identifier: 'shared@example.com' };

async function createTaskVia(input: Record<string, unknown>, headers?: Record<string, string>) {
  const { body } = await svc.graph(CREATE_TASK, { input }, headers);
  return dataOf<{ task: Record<string, unknown> & { id: string } }>(body, 'createTask').task;
}

/** Events recorded in a workspace: a refused write records none. */
async function eventCount(workspaceId: string): Promise<number> {
  const rows = await svc.db.database.db.execute<{ n: number }>(
    sql`select count(*)::int as n from events where workspace_id = ${workspaceId}`,
  );
  return (rows as unknown as { n: number }[])[0]?.n ?? 0;
}

/** B's contact and task as B reads them. */
async function bState() {
  const contact = await svc.graph(CONTACT, { id: bContact.id }, other);
  const task = await svc.graph(TASK, { id: bTaskId }, other);
  return {
    contact: dataOf<ContactData>(contact.body, 'contact'),
    task: dataOf<Record<string, unknown>>(task.body, 'task'),
    events: await eventCount(bWorkspaceId),
  };
}

beforeAll(async () => {
  svc = await startTestService();
  ({ workspaceId: bWorkspaceId, headers: other } = await freshWorkspaceHeaders(svc));
  bAdminId = dataOf<{ id: string }>((await svc.graph('{ me { id } }', {}, other)).body, 'me').id;
  aContact = await createContactVia(svc, 'Ada in A', [identity]);
  // The same identity may exist once in each workspace.
  bContact = await createContactVia(
    svc,
    'Bea in B',
    [identity, { channel: 'phone', identifier: '+1 555 0199 321' }],
    other,
  );
  bTaskId = (
    await createTaskVia({ title: 'B task', contactId: bContact.id, dueOn: '2026-01-01' }, other)
  ).id;
  aTask = await createTaskVia({ title: 'A task', contactId: aContact.id, dueOn: '2026-01-01' });
});
afterAll(() => svc.stop());

describe('the same identity in two workspaces', () => {
  test('is held once in each; identity_taken names only the own workspace’s owner', async () => {
    expect(aContact.identities).toEqual([expect.objectContaining(identity)]);
    expect(bContact.identities).toContainEqual(expect.objectContaining(identity));
    // Held once per workspace: a second contact of either workspace is refused it, and the
    // refusal names that workspace's own holder.
    for (const [headers, owner] of [
      [undefined, aContact],
      [other, bContact],
    ] as const) {
      const second = await createContactVia(svc, 'Second holder', [], headers);
      const { body } = await svc.graph(
        ADD_IDENTITY,
        { contactId: second.id, identity: { channel: 'email', identifier: 'Shared@Example.com' } },
        headers,
      );
      expectReason(body, 'CONFLICT', 'identity_taken', { ownerContactId: owner.id });
    }
  });
});

describe('another workspace’s ids answer exactly like unknown ids, and change nothing', () => {
  test('contact and renameContact', async () => {
    const before = await bState();
    await expectAnsweredAsUnknown(svc, 'contact(id)', CONTACT, (id) => ({ id }), bContact.id);
    await expectAnsweredAsUnknown(
      svc,
      'renameContact(id)',
      RENAME_CONTACT,
      (id) => ({ id, name: 'Hijacked' }),
      bContact.id,
    );
    expect(await bState()).toEqual(before);
    expect(before.contact.name).toBe('Bea in B');
  });

  test('addContactIdentity(contactId) and deleteContactIdentity(id)', async () => {
    const before = await bState();
    // A fresh identity, and one A itself holds: neither reaches B's contact.
    for (const added of [{ channel: 'email', identifier: 'intruder@example.com' }, identity]) {
      await expectAnsweredAsUnknown(
        svc,
        'addContactIdentity(contactId)',
        ADD_IDENTITY,
        (contactId) => ({ contactId, identity: added }),
        bContact.id,
      );
    }
    for (const bIdentity of bContact.identities) {
      await expectAnsweredAsUnknown(
        svc,
        'deleteContactIdentity(id)',
        DELETE_IDENTITY,
        (id) => ({ id }),
        bIdentity.id,
      );
    }
    const after = await bState();
    expect(after).toEqual(before);
    expect(after.contact.identities.map((i) => i.id).sort()).toEqual(
      bContact.identities.map((i) => i.id).sort(),
    );
    // A's own contact kept its identity too.
    const mine = await svc.graph(CONTACT, { id: aContact.id });
    expect(dataOf<ContactData>(mine.body, 'contact').identities).toEqual(aContact.identities);
  });

  test('task and updateTask(id)', async () => {
    const before = await bState();
    await expectAnsweredAsUnknown(svc, 'task(id)', TASK, (id) => ({ id }), bTaskId);
    await expectAnsweredAsUnknown(
      svc,
      'updateTask(id)',
      UPDATE_TASK,
      (id) => ({ id, input: { title: 'Hijacked', status: 'done' } }),
      bTaskId,
    );
    expect(await bState()).toEqual(before);
    expect(before.task.title).toBe('B task');
  });

  test('updateTask(input.contactId) and updateTask(input.assigneeId) on A’s own task', async () => {
    const before = await bState();
    await expectAnsweredAsUnknown(
      svc,
      'updateTask(input.contactId)',
      UPDATE_TASK,
      (contactId) => ({ id: aTask.id, input: { contactId } }),
      bContact.id,
    );
    await expectAnsweredAsUnknown(
      svc,
      'updateTask(input.assigneeId)',
      UPDATE_TASK,
      (assigneeId) => ({ id: aTask.id, input: { assigneeId } }),
      bAdminId,
    );
    const { body } = await svc.graph(`query ($id: UUID!) { task(id: $id) { ${TASK_FIELDS} } }`, {
      id: aTask.id,
    });
    expect(dataOf(body, 'task')).toEqual(aTask);
    expect(await bState()).toEqual(before);
  });

  test('createTask(input.contactId) and createTask(input.assigneeId)', async () => {
    const before = await bState();
    const aEvents = await eventCount(svc.workspace.id);
    await expectAnsweredAsUnknown(
      svc,
      'createTask(input.contactId)',
      CREATE_TASK,
      (contactId) => ({ input: { title: 'x', contactId } }),
      bContact.id,
    );
    await expectAnsweredAsUnknown(
      svc,
      'createTask(input.assigneeId)',
      CREATE_TASK,
      (assigneeId) => ({ input: { title: 'x', assigneeId } }),
      bAdminId,
    );
    expect(await bState()).toEqual(before);
    expect(await eventCount(svc.workspace.id)).toBe(aEvents);
    const stored = await svc.db.database.db.execute(sql`select id from tasks where title = 'x'`);
    expect([...(stored as unknown as unknown[])]).toEqual([]);
  });

  test('tasks(contactId)', async () => {
    await expectAnsweredAsUnknown(
      svc,
      'tasks(contactId)',
      TASKS,
      (contactId) => ({ contactId, first: 100 }),
      bContact.id,
    );
  });
});

describe('lists and counts never include another workspace’s rows', () => {
  test('contacts, contactPage and tasks', async () => {
    const aContacts = await svc.db.database.db.execute<{ id: string }>(
      sql`select id from contacts where workspace_id = ${svc.workspace.id} order by id`,
    );
    const aContactIds = (aContacts as unknown as { id: string }[]).map((row) => row.id);
    expect(aContactIds).toContain(aContact.id);
    const contacts = dataOf<{ edges: { node: { id: string } }[] }>(
      (await svc.graph(CONTACTS, { first: 100 })).body,
      'contacts',
    );
    expect(contacts.edges.map((edge) => edge.node.id).sort()).toEqual(aContactIds);
    const page = dataOf<{ items: { id: string }[]; total: number }>(
      (await svc.graph(CONTACT_PAGE, { limit: 100 })).body,
      'contactPage',
    );
    expect(page.items.map((item) => item.id).sort()).toEqual(aContactIds);
    expect(page.total).toBe(aContactIds.length);
    // Searches by B's name, B's phone digits and the shared identity find only A's rows.
    for (const q of ['Bea', '0199321']) {
      const searched = dataOf<{ items: unknown[]; total: number }>(
        (await svc.graph(CONTACT_PAGE, { q })).body,
        'contactPage',
      );
      expect({ q, items: searched.items, total: searched.total }).toEqual({
        q,
        items: [],
        total: 0,
      });
      const listed = dataOf<{ edges: unknown[] }>(
        (await svc.graph(CONTACTS, { q })).body,
        'contacts',
      );
      expect({ q, edges: listed.edges }).toEqual({ q, edges: [] });
    }
    const byChannel = dataOf<{ items: { id: string }[] }>(
      (await svc.graph(CONTACT_PAGE, { channels: ['phone'] })).body,
      'contactPage',
    );
    expect(byChannel.items.map((item) => item.id)).not.toContain(bContact.id);
    const tasks = dataOf<{ edges: { node: { id: string } }[] }>(
      (await svc.graph(TASKS, { dueBefore: '2999-01-01', first: 100 })).body,
      'tasks',
    );
    expect(tasks.edges.map((edge) => edge.node.id)).toEqual([aTask.id]);
    // B sees its own rows, so the empty answers above are not an empty database.
    const bPage = dataOf<{ items: { id: string }[]; total: number }>(
      (await svc.graph(CONTACT_PAGE, { q: 'Bea' }, other)).body,
      'contactPage',
    );
    expect(bPage.items.map((item) => item.id)).toEqual([bContact.id]);
  });
});
