import { and, asc, eq, gt, inArray, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { tasks, type Task } from './tables.js';

export type NewTaskRow = typeof tasks.$inferInsert;

/** The fields `updateTask` may change, as stored. */
export type TaskChanges = Partial<
  Pick<Task, 'title' | 'dueOn' | 'priority' | 'status' | 'contactId' | 'assigneeId' | 'completedAt'>
>;

export async function findTask(
  db: Db,
  workspaceId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<Task | undefined> {
  const query = db
    .select()
    .from(tasks)
    .where(and(eq(tasks.workspaceId, workspaceId), eq(tasks.id, id)));
  const [row] = options.lock ? await query.for('update') : await query;
  return row;
}

/**
 * Inserts a task, or nothing when its (origin source, origin event) is already stored:
 * `on conflict do nothing` waits for a racing insert of the same origin to commit, so
 * two concurrent creates leave exactly one row and the loser finds it with
 * {@link findTaskByOrigin}.
 */
export async function insertTaskOnce(db: Db, row: NewTaskRow): Promise<Task | undefined> {
  const [inserted] = await db
    .insert(tasks)
    .values(row)
    .onConflictDoNothing({
      target: [tasks.workspaceId, tasks.originSource, tasks.originEventId],
      where: sql`${tasks.originEventId} is not null`,
    })
    .returning();
  return inserted;
}

export async function findTaskByOrigin(
  db: Db,
  workspaceId: string,
  originSource: string,
  originEventId: string,
): Promise<Task | undefined> {
  const [row] = await db
    .select()
    .from(tasks)
    .where(
      and(
        eq(tasks.workspaceId, workspaceId),
        eq(tasks.originSource, originSource),
        eq(tasks.originEventId, originEventId),
      ),
    );
  return row;
}

export async function updateTaskRow(
  db: Db,
  workspaceId: string,
  id: string,
  changes: TaskChanges,
): Promise<Task> {
  const [row] = await db
    .update(tasks)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(and(eq(tasks.workspaceId, workspaceId), eq(tasks.id, id)))
    .returning();
  return row as Task;
}

export type ListFilter =
  | { kind: 'date'; date: string }
  | { kind: 'dueBefore'; date: string }
  | { kind: 'contactId'; contactId: string };

/** The keyset position after which a page starts: the last row's due day (or null) and id. */
export interface TaskKey {
  dueOn: string | null;
  id: string;
}

/**
 * One assignee's tasks by due day (undated last), then id: the order of
 * `tasks_assignee_due_idx` and `tasks_contact_idx`, stable across pages.
 */
export function selectAssigneeTasks(
  db: Db,
  args: {
    workspaceId: string;
    assigneeId: string;
    filter: ListFilter;
    status: string | null;
    after: TaskKey | null;
    limit: number;
  },
): Promise<Task[]> {
  return db
    .select()
    .from(tasks)
    .where(
      and(
        eq(tasks.workspaceId, args.workspaceId),
        eq(tasks.assigneeId, args.assigneeId),
        filterCondition(args.filter),
        args.status === null ? undefined : eq(tasks.status, args.status),
        args.after ? afterCondition(args.after) : undefined,
      ),
    )
    .orderBy(sql`${tasks.dueOn} asc nulls last`, asc(tasks.id))
    .limit(args.limit);
}

function filterCondition(filter: ListFilter): SQL | undefined {
  switch (filter.kind) {
    case 'date':
      return eq(tasks.dueOn, filter.date);
    case 'dueBefore':
      return lt(tasks.dueOn, filter.date);
    case 'contactId':
      return eq(tasks.contactId, filter.contactId);
  }
}

/** Rows after `key` in (due day nulls last, id) order. */
function afterCondition(key: TaskKey): SQL | undefined {
  if (key.dueOn === null) return and(isNull(tasks.dueOn), gt(tasks.id, key.id));
  return or(
    gt(tasks.dueOn, key.dueOn),
    and(eq(tasks.dueOn, key.dueOn), gt(tasks.id, key.id)),
    isNull(tasks.dueOn),
  );
}

/**
 * The first `perContact` open tasks of each contact, every assignee's, in one read
 * (`Contact.tasks` across a page of contacts).
 */
export async function selectOpenTasksOfContacts(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
  perContact: number,
): Promise<Task[]> {
  const ranked = db
    .select({
      id: tasks.id,
      rank: sql<number>`row_number() over (partition by ${tasks.contactId} order by ${tasks.dueOn} asc nulls last, ${tasks.id})`.as(
        'rank',
      ),
    })
    .from(tasks)
    .where(
      and(
        eq(tasks.workspaceId, workspaceId),
        inArray(tasks.contactId, [...contactIds]),
        eq(tasks.status, 'open'),
      ),
    )
    .as('ranked');
  const rows = await db
    .select({ task: tasks })
    .from(tasks)
    .innerJoin(ranked, eq(ranked.id, tasks.id))
    .where(and(eq(tasks.workspaceId, workspaceId), sql`${ranked.rank} <= ${perContact}`))
    .orderBy(sql`${tasks.dueOn} asc nulls last`, asc(tasks.id));
  return rows.map((r) => r.task);
}
