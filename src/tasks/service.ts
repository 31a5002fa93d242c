import { contactExists } from '../contacts/queries.js';
import { ERASE_RECORDS } from '../auth/access.js';
import { signedIn, type Context } from '../context.js';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { checkText, TEXT_MAX } from '../limits.js';
import { recordEvent } from '../events/service.js';
import { userExists } from '../users/service.js';
import {
  findTask,
  deleteTaskRow,
  findTaskByOrigin,
  insertTaskOnce,
  selectAssigneeTasks,
  updateTaskRow,
  type ListFilter,
  type TaskChanges,
  type TaskField,
} from './queries.js';
import type { Task } from './tables.js';
import type { ReadAheadChoice } from '../graph/read-ahead.js';
import { decodeCursor, encodeCursor, pageSize, toPage, type Page } from '../paging/index.js';

/**
 * Task statuses (SPEC 3 shows only `open`). Any status may move to any other: `done`
 * stamps `completedAt`, leaving `done` (reopening, cancelling) clears it.
 */
export const TASK_STATUSES = ['open', 'done', 'cancelled'] as const;
/** Task priorities, lowest first; a task without one is `normal`. */
export const TASK_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
/** The `tasks(status:)` value that lists every status. */
export const ALL_STATUSES = 'all';

export interface CreateTaskInput {
  title: string;
  dueOn?: string | null;
  priority?: string | null;
  status?: string | null;
  contactId?: string | null;
  assigneeId?: string | null;
  originSource?: string | null;
  originEventId?: string | null;
}

/** `undefined` leaves a field as it is; `null` clears `dueOn` and `contactId`. */
export interface UpdateTaskInput {
  title?: string | null;
  dueOn?: string | null;
  priority?: string | null;
  status?: string | null;
  contactId?: string | null;
  assigneeId?: string | null;
}

export interface CreateTaskResult {
  replay: boolean;
  task: Task;
}

export interface ListTasksArgs {
  date?: string | null;
  dueBefore?: string | null;
  contactId?: string | null;
  status?: string | null;
  first?: number | null;
  after?: string | null;
}

/** An origin as stored: trimmed, capped, and blank is none. */
function optionalText(text: string | null | undefined, field: string): string | null {
  const trimmed = text?.trim();
  return trimmed ? checkText(trimmed, field, TEXT_MAX.origin) : null;
}

function checkTitle(title: string): string {
  const trimmed = title.trim();
  if (trimmed === '') throw refuse('task_title_required');
  return checkText(trimmed, 'title', TEXT_MAX.title);
}

function checkPriority(priority: string): string {
  if (!(TASK_PRIORITIES as readonly string[]).includes(priority)) {
    throw refuse('task_priority_unknown', { allowed: [...TASK_PRIORITIES] });
  }
  return priority;
}

function checkStatus(status: string): string {
  if (!(TASK_STATUSES as readonly string[]).includes(status)) {
    throw refuse('task_status_unknown', { allowed: [...TASK_STATUSES] });
  }
  return status;
}

/**
 * The origin a create records. A token's work is always `token:<name>` (SPEC 5), whatever
 * the input says; a session names its own source, and must when it names an event.
 */
export function originOf(
  token: { name: string } | null,
  input: Pick<CreateTaskInput, 'originSource' | 'originEventId'>,
): { originSource: string | null; originEventId: string | null } {
  const originEventId = optionalText(input.originEventId, 'originEventId');
  const originSource = token
    ? `token:${token.name}`
    : optionalText(input.originSource, 'originSource');
  if (originEventId !== null && originSource === null) throw refuse('origin_source_required');
  return { originSource, originEventId };
}

/** Foreign keys allow any id of the workspace; these checks name what was wrong. */
async function checkLinks(
  db: Db,
  workspaceId: string,
  links: { assigneeId?: string | null; contactId?: string | null },
): Promise<void> {
  if (links.assigneeId && !(await userExists(db, workspaceId, links.assigneeId))) {
    throw refuse('user_not_found');
  }
  if (links.contactId && !(await contactExists(db, workspaceId, links.contactId))) {
    throw refuse('contact_not_found');
  }
}

function eventData(task: Task, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: task.id,
    title: task.title,
    status: task.status,
    priority: task.priority,
    dueOn: task.dueOn,
    contactId: task.contactId,
    assigneeId: task.assigneeId,
    ...extra,
  };
}

/**
 * Creates a task, or answers the stored one with `replay: true` when its origin event was
 * seen before (SPEC 4.2): exactly one row even when two creates race.
 */
export async function createTask(ctx: Context, input: CreateTaskInput): Promise<CreateTaskResult> {
  const { actor, workspaceId } = signedIn(ctx);
  const title = checkTitle(input.title);
  const priority = checkPriority(input.priority ?? 'normal');
  const status = checkStatus(input.status ?? 'open');
  const origin = originOf(actor.token, input);
  const assigneeId = input.assigneeId ?? actor.userId;
  return ctx.database.db.transaction(async (tx) => {
    await checkLinks(tx, workspaceId, { assigneeId, contactId: input.contactId });
    const inserted = await insertTaskOnce(tx, {
      workspaceId,
      title,
      dueOn: input.dueOn ?? null,
      priority,
      status,
      contactId: input.contactId ?? null,
      assigneeId,
      createdBy: actor.userId,
      ...origin,
      completedAt: status === 'done' ? new Date() : null,
    });
    if (!inserted) {
      // The origin was taken: by a committed create, or by a racing one that has now
      // committed (the conflict waited for it), so this read finds it.
      const stored = await findTaskByOrigin(
        tx,
        workspaceId,
        origin.originSource as string,
        origin.originEventId as string,
      );
      if (!stored) throw new Error('task origin conflicted but no task holds it');
      return { replay: true, task: stored };
    }
    await recordTaskEvent(tx, actor.userId, 'task.created', inserted, inserted.assigneeId);
    return { replay: false, task: inserted };
  });
}

function recordTaskEvent(
  tx: Db,
  actorUserId: string,
  name: string,
  task: Task,
  audienceUserId: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  return recordEvent(tx, {
    workspaceId: task.workspaceId,
    name,
    subjectId: task.id,
    audienceUserId,
    actorUserId,
    data: eventData(task, extra),
  });
}

/** Checks an update's fields and turns it into stored changes against `current`. */
function changesFor(current: Task, input: UpdateTaskInput): TaskChanges {
  const changes: TaskChanges = {};
  if (input.title !== undefined && input.title !== null) changes.title = checkTitle(input.title);
  if (input.title === null) throw refuse('task_title_required');
  if (input.priority != null) changes.priority = checkPriority(input.priority);
  if (input.dueOn !== undefined) changes.dueOn = input.dueOn;
  if (input.contactId !== undefined) changes.contactId = input.contactId;
  if (input.assigneeId != null) changes.assigneeId = input.assigneeId;
  if (input.status != null) {
    const status = checkStatus(input.status);
    if (status !== current.status) {
      changes.status = status;
      changes.completedAt = status === 'done' ? new Date() : null;
    }
  }
  return changes;
}

/** The names of the fields whose stored value differs. */
function changedFields(before: Task, after: Task): string[] {
  const fields = ['title', 'dueOn', 'priority', 'status', 'contactId', 'assigneeId'] as const;
  return fields.filter((f) => before[f] !== after[f]);
}

/**
 * Changes a task of the workspace. Events go to the assignee (and to the previous one when
 * the task changes hands); `task.completed` also marks a move to `done`.
 */
export async function updateTask(ctx: Context, id: string, input: UpdateTaskInput): Promise<Task> {
  const { actor, workspaceId } = signedIn(ctx);
  return ctx.database.db.transaction(async (tx) => {
    const current = await findTask(tx, workspaceId, id, { lock: true });
    if (!current) throw refuse('task_not_found');
    const changes = changesFor(current, input);
    await checkLinks(tx, workspaceId, {
      assigneeId: changes.assigneeId,
      contactId: changes.contactId,
    });
    const task = await updateTaskRow(tx, workspaceId, id, changes);
    const changed = changedFields(current, task);
    if (changed.length === 0) return task;
    await recordTaskEvent(tx, actor.userId, 'task.updated', task, task.assigneeId, { changed });
    if (current.assigneeId !== task.assigneeId) {
      await recordTaskEvent(tx, actor.userId, 'task.updated', task, current.assigneeId, {
        changed,
      });
    }
    if (changed.includes('status') && task.status === 'done') {
      await recordTaskEvent(tx, actor.userId, 'task.completed', task, task.assigneeId);
    }
    return task;
  });
}

/**
 * Deletes a task for its assignee, its creator or a holder of erase_records (the stock
 * admin); anyone else is refused capability_missing. `task.deleted` reaches the assignee.
 */
export async function deleteTask(ctx: Context, id: string): Promise<{ id: string }> {
  const { actor, workspaceId } = signedIn(ctx);
  return ctx.database.db.transaction(async (tx) => {
    const task = await findTask(tx, workspaceId, id, { lock: true });
    if (!task) throw refuse('task_not_found');
    const own = task.assigneeId === actor.userId || task.createdBy === actor.userId;
    if (!own && !actor.capabilities.has(ERASE_RECORDS)) {
      throw refuse(
        'capability_missing',
        { scope: 'tasks:write', capability: ERASE_RECORDS },
        { extensions: { capability: ERASE_RECORDS } },
      );
    }
    await deleteTaskRow(tx, workspaceId, id);
    await recordEvent(tx, {
      workspaceId,
      name: 'task.deleted',
      subjectId: task.id,
      audienceUserId: task.assigneeId,
      actorUserId: actor.userId,
      data: { assigneeId: task.assigneeId, contactId: task.contactId },
    });
    return { id: task.id };
  });
}

/** Any task of the caller's workspace, whoever it is assigned to (as `Contact.tasks` shows). */
export async function getTask(ctx: Context, id: string): Promise<Task> {
  const task = await findTask(ctx.database.db, signedIn(ctx).workspaceId, id);
  if (!task) throw refuse('task_not_found');
  return task;
}

/** Exactly one of `date`, `dueBefore`, `contactId`. */
export function filterOf(args: ListTasksArgs): ListFilter {
  const given: ListFilter[] = [];
  if (args.date != null) given.push({ kind: 'date', date: args.date });
  if (args.dueBefore != null) given.push({ kind: 'dueBefore', date: args.dueBefore });
  if (args.contactId != null) given.push({ kind: 'contactId', contactId: args.contactId });
  const [only] = given;
  if (given.length !== 1 || !only) throw refuse('task_filter_choice_required');
  return only;
}

/** The stored status a list keeps, or null for `all`; `open` when none is asked. */
export function statusFilterOf(status: string | null | undefined): string | null {
  const asked = status ?? 'open';
  if (asked === ALL_STATUSES) return null;
  if (!(TASK_STATUSES as readonly string[]).includes(asked)) {
    throw refuse('task_status_unknown', { allowed: [...TASK_STATUSES, ALL_STATUSES] });
  }
  return asked;
}

const CURSOR_FIELD = 'tasks';
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const datePattern = /^\d{4}-\d{2}-\d{2}$/;

function decodeTaskCursor(cursor: string) {
  const [dueOn, id] = decodeCursor(CURSOR_FIELD, cursor, 2);
  if (
    typeof dueOn !== 'string' ||
    typeof id !== 'string' ||
    !uuidPattern.test(id) ||
    (dueOn !== '' && !datePattern.test(dueOn))
  ) {
    throw refuse('cursor_malformed');
  }
  // An undated task's position is written as the empty string.
  return { dueOn: dueOn === '' ? null : dueOn, id };
}

/**
 * The caller's own tasks (SPEC 4.2: a task is listed to its assignee), by due day with
 * undated tasks last, then id.
 */
export async function listTasks(
  ctx: Context,
  args: ListTasksArgs,
  /**
   * Which of the tasks' columns to read (those the operation's fields show; all when not
   * said), and other domains' fields of each task ahead, in the same statement
   * (src/graph/read-ahead.ts).
   */
  read: { fields?: readonly TaskField[]; readAheads?: readonly ReadAheadChoice[] } = {},
): Promise<Page<Task>> {
  const { actor, workspaceId } = signedIn(ctx);
  const filter = filterOf(args);
  const status = statusFilterOf(args.status);
  const size = pageSize(args.first, ctx.config);
  const after = args.after ? decodeTaskCursor(args.after) : null;
  if (filter.kind === 'contactId') {
    if (!(await contactExists(ctx.database.db, workspaceId, filter.contactId))) {
      throw refuse('contact_not_found');
    }
  }
  const rows = await selectAssigneeTasks(ctx.database.db, {
    workspaceId: workspaceId,
    assigneeId: actor.userId,
    filter,
    status,
    after,
    limit: size + 1,
    ...(read.fields ? { fields: read.fields } : {}),
    columns: read.readAheads?.map(({ readAhead }) => readAhead),
  });
  return toPage(rows, size, (task) => encodeCursor(CURSOR_FIELD, [task.dueOn ?? '', task.id]));
}
