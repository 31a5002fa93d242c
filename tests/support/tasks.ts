import { expect } from '@jest/globals';
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/client.js';
import type { GraphBody } from './service.js';

/**
 * A contact stored straight in SQL (the contacts service is written alongside), counted
 * in `workspace_counts` as the service would.
 */
export async function insertContact(
  db: Db,
  workspace: { id: string },
  name = 'Ada Lovelace',
): Promise<{ id: string; name: string }> {
  const rows = await db.execute<{ id: string }>(
    sql`insert into contacts (workspace_id, name) values (${workspace.id}, ${name}) returning id`,
  );
  await db.execute(
    sql`insert into workspace_counts (workspace_id, contacts) values (${workspace.id}, 1)
        on conflict (workspace_id) do update set contacts = workspace_counts.contacts + 1`,
  );
  const [row] = rows as unknown as { id: string }[];
  return { id: (row as { id: string }).id, name };
}

/** The tasks of a workspace as stored, for counting rows a test expects. */
export async function storedTasks(
  db: Db,
  workspace: { id: string },
): Promise<Record<string, unknown>[]> {
  const rows = await db.execute(
    sql`select * from tasks where workspace_id = ${workspace.id} order by created_at, id`,
  );
  return [...(rows as unknown as Record<string, unknown>[])];
}

/** Events recorded about `subjectId`, oldest first. */
export async function eventsAbout(
  db: Db,
  subjectId: string,
): Promise<{ name: string; audience_user_id: string | null; data: Record<string, unknown> }[]> {
  const rows = await db.execute(
    sql`select name, audience_user_id, data from events where subject_id = ${subjectId}
        order by at, name`,
  );
  return [...(rows as unknown as never[])];
}

export function expectRefusal(
  body: GraphBody,
  expected: { code: string; reason: string; meta?: Record<string, unknown>; message?: string },
): void {
  expect(body.errors?.[0]?.extensions).toEqual(
    expect.objectContaining({
      code: expected.code,
      reason: expected.reason,
      meta: expected.meta ?? {},
    }),
  );
  if (expected.message) expect(body.errors?.[0]?.message).toBe(expected.message);
  expect(body.data).toBeNull();
  expect(body.errors).toHaveLength(1);
}

export const TASK_FIELDS = `id title dueOn status priority contactId assigneeId originSource
  originEventId createdAt updatedAt completedAt`;

export const CREATE_TASK = `mutation ($input: CreateTaskInput!) {
  createTask(input: $input) { replay task { ${TASK_FIELDS} } }
}`;

export const UPDATE_TASK = `mutation ($id: UUID!, $input: UpdateTaskInput!) {
  updateTask(id: $id, input: $input) { ${TASK_FIELDS} }
}`;

export const TASK = `query ($id: UUID!) { task(id: $id) { ${TASK_FIELDS} } }`;

export const TASKS = `query ($date: Date, $dueBefore: Date, $contactId: UUID, $status: String,
  $first: Int, $after: String) {
  tasks(date: $date, dueBefore: $dueBefore, contactId: $contactId, status: $status,
    first: $first, after: $after) {
    edges { cursor node { id title dueOn status assigneeId } }
    pageInfo { hasNextPage endCursor }
  }
}`;
