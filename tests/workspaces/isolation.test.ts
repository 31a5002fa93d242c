import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  CONTACT,
  CONTACT_PAGE,
  CONTACTS,
  createContactVia,
  dataOf,
  freshWorkspaceHeaders,
  RENAME_CONTACT,
  type ContactData,
} from '../support/contacts.js';
import { startTestService, type GraphBody, type TestService } from '../support/service.js';
import { CREATE_TASK, TASK, TASKS, UPDATE_TASK } from '../support/tasks.js';

// Two workspaces on one service: A (the test service's admin) and B. Every id of B's
// answers A exactly as an id that does not exist, and A's lists never show B's rows.

let svc: TestService;
let other: Record<string, string>;
let bContact: ContactData;
let bTaskId: string;
let aContact: ContactData;

const identity = { channel: 'email', identifier: 'shared@example.com' };

beforeAll(async () => {
  svc = await startTestService();
  ({ headers: other } = await freshWorkspaceHeaders(svc));
  aContact = await createContactVia(svc, 'Ada in A', [identity]);
  // The same identity may exist once in each workspace.
  bContact = await createContactVia(svc, 'Bea in B', [identity], other);
  const { body } = await svc.graph(
    CREATE_TASK,
    { input: { title: 'B task', contactId: bContact.id, dueOn: '2026-01-01' } },
    other,
  );
  bTaskId = dataOf<{ task: { id: string } }>(body, 'createTask').task.id;
});
afterAll(() => svc.stop());

/** A's answer for B's id and for an unknown id, with ids masked. */
async function bothAnswers(
  query: string,
  variables: (id: string) => Record<string, unknown>,
  foreignId: string,
): Promise<[GraphBody, GraphBody]> {
  const unknownId = randomUUID();
  const mask = (body: GraphBody, id: string) =>
    JSON.parse(JSON.stringify(body).split(id).join('<id>')) as GraphBody;
  const foreign = await svc.graph(query, variables(foreignId));
  const unknown = await svc.graph(query, variables(unknownId));
  expect(foreign.status).toBe(unknown.status);
  return [mask(foreign.body, foreignId), mask(unknown.body, unknownId)];
}

describe('another workspace’s ids answer exactly like unknown ids', () => {
  test('contact and renameContact', async () => {
    for (const [query, variables] of [
      [CONTACT, (id: string) => ({ id })],
      [RENAME_CONTACT, (id: string) => ({ id, name: 'Hijacked' })],
    ] as const) {
      const [foreign, unknown] = await bothAnswers(query, variables, bContact.id);
      expect(foreign.errors?.[0]?.extensions.code).toBeDefined();
      expect(foreign).toEqual(unknown);
    }
    const { body } = await svc.graph(CONTACT, { id: bContact.id }, other);
    expect(dataOf<ContactData>(body, 'contact').name).toBe('Bea in B');
  });

  test('task and updateTask', async () => {
    for (const [query, variables] of [
      [TASK, (id: string) => ({ id })],
      [UPDATE_TASK, (id: string) => ({ id, input: { title: 'Hijacked' } })],
    ] as const) {
      const [foreign, unknown] = await bothAnswers(query, variables, bTaskId);
      expect(foreign.errors?.[0]?.extensions.code).toBeDefined();
      expect(foreign).toEqual(unknown);
    }
    const [foreign, unknown] = await bothAnswers(
      CREATE_TASK,
      (id) => ({ input: { title: 'x', contactId: id } }),
      bContact.id,
    );
    expect(foreign.errors?.[0]?.extensions.code).toBeDefined();
    expect(foreign).toEqual(unknown);
    const { body } = await svc.graph(TASK, { id: bTaskId }, other);
    expect(dataOf<{ title: string }>(body, 'task').title).toBe('B task');
  });
});

describe('lists and counts never include another workspace’s rows', () => {
  test('contacts, contactPage and tasks', async () => {
    const contacts = dataOf<{ edges: { node: { id: string } }[] }>(
      (await svc.graph(CONTACTS, { first: 100 })).body,
      'contacts',
    );
    expect(contacts.edges.map((edge) => edge.node.id)).toEqual([aContact.id]);
    const page = dataOf<{ items: { id: string }[]; total: number }>(
      (await svc.graph(CONTACT_PAGE, { limit: 100 })).body,
      'contactPage',
    );
    expect(page.items.map((item) => item.id)).toEqual([aContact.id]);
    expect(page.total).toBe(1);
    const searched = dataOf<{ total: number }>(
      (await svc.graph(CONTACT_PAGE, { q: 'Bea' })).body,
      'contactPage',
    );
    expect(searched.total).toBe(0);
    const tasks = dataOf<{ edges: { node: { id: string } }[] }>(
      (await svc.graph(TASKS, { dueBefore: '2999-01-01', first: 100 })).body,
      'tasks',
    );
    expect(tasks.edges.map((edge) => edge.node.id)).not.toContain(bTaskId);
    const forB = await svc.graph(TASKS, { contactId: bContact.id, first: 100 });
    const forUnknown = await svc.graph(TASKS, { contactId: randomUUID(), first: 100 });
    expect(JSON.stringify(forB.body).split(bContact.id).join('<id>')).toBe(
      JSON.stringify(forUnknown.body).replace(
        /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g,
        '<id>',
      ),
    );
  });
});
