// deleteTask (issue 28, docs/contacts.md): its assignee, its creator or a holder of
// erase_records may delete a task; anyone else is refused capability_missing.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { User } from '../../src/users/tables.js';
import { dataOf, freshWorkspaceHeaders } from '../support/contacts.js';
import { bearer, createUser, tokenFor } from '../support/factories.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
let creator: User;
let assignee: User;
let stranger: User;
const headersOf = async (user: User) => bearer(await tokenFor(svc.db.database.db, user));

beforeAll(async () => {
  svc = await startTestService();
  const db = svc.db.database.db;
  creator = await createUser(db, svc.workspace, { role: 'member' });
  assignee = await createUser(db, svc.workspace, { role: 'member' });
  stranger = await createUser(db, svc.workspace, { role: 'member' });
});

afterAll(() => svc.stop());

const DELETE_TASK = 'mutation ($id: UUID!) { deleteTask(id: $id) { id } }';

/** A task `creator` made for `assignee`. */
async function task(): Promise<string> {
  const { body } = await svc.graph(
    `mutation ($assigneeId: UUID) { createTask(input: { title: "Ring back",
      assigneeId: $assigneeId }) { task { id } } }`,
    { assigneeId: assignee.id },
    await headersOf(creator),
  );
  return dataOf<{ task: { id: string } }>(body, 'createTask').task.id;
}

async function exists(id: string): Promise<boolean> {
  const { body } = await svc.graph('query ($id: UUID!) { task(id: $id) { id } }', { id });
  return body.data !== null;
}

describe('deleteTask', () => {
  test.each([
    ['its assignee', () => assignee],
    ['its creator', () => creator],
    ['an admin (erase_records)', () => svc.admin],
  ])('%s may delete it', async (_who, user) => {
    const id = await task();
    const { body } = await svc.graph(DELETE_TASK, { id }, await headersOf(user()));
    expect(body).toEqual({ data: { deleteTask: { id } } });
    expect(await exists(id)).toBe(false);
  });

  test('another member is refused capability_missing and the task stays', async () => {
    const id = await task();
    const { body } = await svc.graph(DELETE_TASK, { id }, await headersOf(stranger));
    expect(body.errors?.[0]).toMatchObject({
      message: 'admin required',
      extensions: {
        code: 'UNAUTHORIZED',
        reason: 'capability_missing',
        capability: 'erase_records',
        meta: { scope: 'tasks:write', capability: 'erase_records' },
      },
    });
    expect(await exists(id)).toBe(true);
  });

  test('records task.deleted for the assignee, naming no title', async () => {
    const id = await task();
    await svc.graph(DELETE_TASK, { id }, await headersOf(assignee));
    const rows = await svc.db.database.sql<{ audience_user_id: string; data: unknown }[]>`
      select audience_user_id, data from events where name = 'task.deleted' and subject_id = ${id}`;
    expect(rows).toEqual([
      {
        audience_user_id: assignee.id,
        data: { taskId: id, assigneeId: assignee.id, contactId: null },
      },
    ]);
  });

  test('a task of another workspace is answered as an unknown id, and stays', async () => {
    const other = await freshWorkspaceHeaders(svc);
    const { body } = await svc.graph(
      'mutation { createTask(input: { title: "Theirs" }) { task { id } } }',
      {},
      other.headers,
    );
    const foreign = dataOf<{ task: { id: string } }>(body, 'createTask').task.id;
    await expectAnsweredAsUnknown(svc, 'deleteTask(id)', DELETE_TASK, (id) => ({ id }), foreign);
    const still = await svc.graph(
      'query ($id: UUID!) { task(id: $id) { id } }',
      { id: foreign },
      other.headers,
    );
    expect(still.body.data).toEqual({ task: { id: foreign } });
  });
});
