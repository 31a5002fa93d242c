import {
  and,
  getTableColumns,
  asc,
  eq,
  gt,
  isNull,
  lt,
  or,
  sql,
  type SQL,
  type SQLWrapper,
} from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { jsonRows } from '../db/json-rows.js';
import { anyUuid, prepared, preparedFamily } from '../db/prepared.js';
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
    /**
     * The task's columns to read, besides its id and due day (the list's order and
     * cursor); every column when absent. A task read without some is typed whole all the
     * same: its reader asked for none of them.
     */
    fields?: readonly TaskField[];
    /**
     * Other domains' columns over each task row, each the row's property of its name (a
     * task's contact, read ahead for `Task.contact`); their placeholders take no values.
     */
    columns?: readonly TaskColumn[];
  },
): Promise<(Task & Record<string, unknown>)[]> {
  const { filter, after } = args;
  const columns = args.columns ?? [];
  const shape: AssigneeShape = `${filter.kind}-${args.status === null ? 'any' : 'status'}-${
    !after ? 'first' : after.dueOn === null ? 'undated' : 'dated'
  }-${args.fields ? fieldsShape(args.fields) : 'all'}${columns.map((c) => `-${c.shape ?? c.name}`).join('')}`;
  return assigneeTasks(
    db,
    shape,
    {
      workspaceId: args.workspaceId,
      assigneeId: args.assigneeId,
      filter: filter.kind === 'contactId' ? filter.contactId : filter.date,
      status: args.status,
      afterDue: after?.dueOn ?? null,
      afterId: after?.id ?? null,
      limit: args.limit,
    },
    columns,
  );
}

/** A column another domain reads over a task row (see `selectAssigneeTasks`). */
export interface TaskColumn {
  name: string;
  /** Its part of the statement's shape. @default name */
  shape?: string;
  column: SQL;
}

/** A task's own column, by its field's name. */
export type TaskField = keyof Task;

const taskColumns = getTableColumns(tasks);
const TASK_FIELDS = Object.keys(taskColumns) as TaskField[];

/** The columns a list always reads: its order and cursor are the due day, then the id. */
const LIST_KEY: readonly TaskField[] = ['id', 'dueOn'];

/** Shapes worked out, by the list of fields (the graph keeps one list per operation). */
const shapes = new WeakMap<readonly TaskField[], string>();

/**
 * A set of columns as part of a statement's shape: a bit per column of the table, in hex,
 * so the same columns have one spelling whatever their order in `fields`.
 */
function fieldsShape(fields: readonly TaskField[]): string {
  let shape = shapes.get(fields);
  if (shape === undefined) {
    let bits = 0;
    for (const field of [...LIST_KEY, ...fields]) bits |= 1 << TASK_FIELDS.indexOf(field);
    shapes.set(fields, (shape = `f${bits.toString(16)}`));
  }
  return shape;
}

/** The columns a shape's `fieldsShape` names, typed as the whole row (see `fields`). */
function fieldsOfShape(part: string): typeof taskColumns {
  if (part === 'all') return taskColumns;
  const bits = Number.parseInt(part.slice(1), 16);
  return Object.fromEntries(
    TASK_FIELDS.filter((_, i) => bits & (1 << i)).map((field) => [field, taskColumns[field]]),
  ) as typeof taskColumns;
}

/**
 * Which conditions an assignee's list has (its filter, a status or none, its position)
 * and which of the task's columns it reads.
 */
type AssigneeShape =
  `${ListFilter['kind']}-${'any' | 'status'}-${'first' | 'undated' | 'dated'}-${string}`;

/** `tasks(...)` of one assignee, built once per shape (the hot read of a task list). */
const assigneeTasks = preparedFamily(
  'svc_assignee_tasks',
  (db, shape: AssigneeShape, columns: readonly TaskColumn[]) => {
    const [kind, status, position, fields = 'all'] = shape.split('-');
    const value = sql.placeholder('filter');
    const afterId = sql.placeholder('afterId');
    return db
      .select({
        ...fieldsOfShape(fields),
        ...Object.fromEntries(columns.map(({ name, column }) => [name, column])),
      })
      .from(tasks)
      .where(
        and(
          eq(tasks.workspaceId, sql.placeholder('workspaceId')),
          eq(tasks.assigneeId, sql.placeholder('assigneeId')),
          kind === 'date'
            ? eq(tasks.dueOn, value)
            : kind === 'dueBefore'
              ? lt(tasks.dueOn, value)
              : eq(tasks.contactId, value),
          status === 'status' ? eq(tasks.status, sql.placeholder('status')) : undefined,
          position === 'undated'
            ? and(isNull(tasks.dueOn), gt(tasks.id, afterId))
            : position === 'dated'
              ? afterDated(sql.placeholder('afterDue'), afterId)
              : undefined,
        ),
      )
      .orderBy(sql`${tasks.dueOn} asc nulls last`, asc(tasks.id))
      .limit(sql.placeholder('limit'));
  },
);

/** Tasks of the workspace by id, in one read whatever their number. */
export function selectTasks(db: Db, workspaceId: string, ids: readonly string[]): Promise<Task[]> {
  return tasksById(db, { workspaceId, ids: [...ids] });
}

const tasksById = prepared('svc_tasks_by_id', (db) =>
  db
    .select()
    .from(tasks)
    .where(and(eq(tasks.workspaceId, sql.placeholder('workspaceId')), anyUuid(tasks.id, 'ids'))),
);

/** Rows after a dated row in (due day nulls last, id) order: later days, then undated. */
function afterDated(dueOn: SQLWrapper, id: SQLWrapper): SQL | undefined {
  return or(
    gt(tasks.dueOn, dueOn),
    and(eq(tasks.dueOn, dueOn), gt(tasks.id, id)),
    isNull(tasks.dueOn),
  );
}

/**
 * The first `perContact` open tasks of each contact, every assignee's, in one read
 * (`Contact.tasks` across a page of contacts).
 */
export function selectOpenTasksOfContacts(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
  perContact: number,
): Promise<Task[]> {
  return openTasksOfContacts(db, { workspaceId, contactIds: [...contactIds], perContact });
}

/** Built once: the contacts come as one array parameter, whatever their number. */
const openTasksOfContacts = prepared('svc_open_tasks_of_contacts', (db) => {
  const workspaceId = sql.placeholder('workspaceId');
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
        anyUuid(tasks.contactId, 'contactIds'),
        eq(tasks.status, 'open'),
      ),
    )
    .as('ranked');
  return db
    .select(getTableColumns(tasks))
    .from(tasks)
    .innerJoin(ranked, eq(ranked.id, tasks.id))
    .where(
      and(
        eq(tasks.workspaceId, workspaceId),
        sql`${ranked.rank} <= ${sql.placeholder('perContact')}`,
      ),
    )
    .orderBy(sql`${tasks.dueOn} asc nulls last`, asc(tasks.id));
});

const openTaskRows = jsonRows<Task>(getTableColumns(tasks));

/**
 * The first open tasks of the contact whose row a statement reads (the outer `contacts`
 * row), in the order of {@link selectOpenTasksOfContacts}, as one JSON column: a contact
 * and its tasks in one statement. Their number is the placeholder `openTasksFirst`.
 */
export const openTasksOfContactColumn = sql<unknown>`coalesce((
    select json_agg(picked.task order by picked.due_on asc nulls last, picked.id) from (
      select ${openTaskRows.row} as task, ${tasks.dueOn} as due_on, ${tasks.id} as id
      from ${tasks}
      where ${tasks.workspaceId} = "contacts"."workspace_id"
        and ${tasks.contactId} = "contacts"."id" and ${tasks.status} = 'open'
      order by ${tasks.dueOn} asc nulls last, ${tasks.id}
      limit ${sql.placeholder('openTasksFirst')}) picked), '[]'::json)`;

/** {@link openTasksOfContactColumn}'s value as the domain's rows. */
export const openTasksFromColumn = (json: unknown): Task[] => openTaskRows.revive(json);

/**
 * Points the tasks of `contactIds` at `targetId`, or at no contact when it is null (an
 * erasure: the task stays, SPEC 2.4's link cleared). Answers the tasks' ids.
 */
export async function relinkContactTasks(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
  targetId: string | null,
): Promise<string[]> {
  if (contactIds.length === 0) return [];
  const rows = await db
    .update(tasks)
    .set({ contactId: targetId, updatedAt: sql`now()` })
    .where(
      and(
        eq(tasks.workspaceId, workspaceId),
        sql`${tasks.contactId} = any(${`{${contactIds.join(',')}}`}::uuid[])`,
      ),
    )
    .returning({ id: tasks.id });
  return rows.map((row) => row.id);
}

/** Deletes a task of the workspace; answers it, or undefined when there was none. */
export async function deleteTaskRow(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<Task | undefined> {
  const [row] = await db
    .delete(tasks)
    .where(and(eq(tasks.workspaceId, workspaceId), eq(tasks.id, id)))
    .returning();
  return row;
}
