import { ContactObject } from '../contacts/graph.js';
import { contactLoaders } from '../contacts/loaders.js';
import { builder } from '../graph/builder.js';
import { connectionOf } from '../graph/connection.js';
import { fieldsAskedOf } from '../graph/selection.js';
import { taskLoaders } from './loaders.js';
import { openTasksFromColumn, openTasksOfContactColumn, type TaskField } from './queries.js';
import {
  createTask,
  deleteTask,
  getTask,
  listTasks,
  updateTask,
  TASK_PRIORITIES,
  TASK_STATUSES,
  type CreateTaskResult,
} from './service.js';
import type { Contact } from '../contacts/tables.js';
import type { Task } from './tables.js';
import { costs } from '../graph/complexity.js';
import { WRITE } from '../graph/costs.js';
import { limited } from '../graph/input-limits.js';
import type { Context } from '../context.js';
import { readAheadsSelected, type ReadAhead } from '../graph/read-ahead.js';
import {
  contactFromColumn,
  contactOfTaskColumn,
  untimedContactOfTaskColumn,
} from '../contacts/queries.js';
import { TEXT_MAX } from '../limits.js';
import { pageSize } from '../paging/index.js';

export const TaskObject = builder.objectRef<Task>('Task');

/**
 * The columns each field of Task shows. A list of tasks reads only the columns of the
 * fields the operation asks of any task (with the id and due day it is ordered by); a field
 * not named here (another domain's) has the list read every column.
 */
const FIELD_COLUMNS: Readonly<Record<string, readonly TaskField[]>> = {
  __typename: [],
  id: [],
  title: ['title'],
  dueOn: [],
  status: ['status'],
  priority: ['priority'],
  contactId: ['contactId'],
  contact: ['contactId'],
  assigneeId: ['assigneeId'],
  originSource: ['originSource'],
  originEventId: ['originEventId'],
  createdAt: ['createdAt'],
  updatedAt: ['updatedAt'],
  completedAt: ['completedAt'],
};

/** The columns for the fields an operation asks of tasks (the set is kept per operation). */
const columnsFor = new WeakMap<ReadonlySet<string>, readonly TaskField[] | null>();

function columnsAsked(asked: ReadonlySet<string>): readonly TaskField[] | undefined {
  let columns = columnsFor.get(asked);
  if (columns === undefined) {
    const each = [...asked].map((field) => FIELD_COLUMNS[field]);
    columns = each.every((c) => c !== undefined) ? [...new Set(each.flat())] : null;
    columnsFor.set(asked, columns);
  }
  return columns ?? undefined;
}

/**
 * `tasks(...) { edges { node { contact } } }` reads each task's contact in the list's
 * statement: the column rides on each task's row, and `Task.contact` answers it from
 * there (no loader, no promise per task). Without its created and updated times when the
 * operation asks neither of any contact (`Contact.createdAt` reads them by id otherwise).
 */
const contactReadAhead: ReadAhead = {
  name: 'contactRead',
  column: contactOfTaskColumn,
  values: () => ({}),
  choose: (info) => {
    const asked = fieldsAskedOf(info, 'Contact');
    return asked.has('createdAt') || asked.has('updatedAt') ? contactReadAhead : untimedContact;
  },
};

const untimedContact: ReadAhead = {
  name: 'contactRead',
  shape: 'contactReadUntimed',
  column: untimedContactOfTaskColumn,
  values: () => ({}),
};

/** A task as a list read it, with its contact read ahead when the operation asked. */
type ListedTask = Task & { contactRead?: unknown };

/** The stored row behind a task a list read without its timestamps. */
async function stored(task: Task, ctx: Context): Promise<Task> {
  if (task.createdAt !== undefined) return task;
  return (await ctx.loaders.of(taskLoaders).tasks.load(task.id)) ?? task;
}

TaskObject.implement({
  description: 'Work owned by one account, optionally about a contact (SPEC 2.4).',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    title: t.exposeString('title'),
    dueOn: t.expose('dueOn', { type: 'Date', nullable: true }),
    status: t.exposeString('status', { description: `One of ${TASK_STATUSES.join(', ')}.` }),
    priority: t.exposeString('priority', {
      description: `One of ${TASK_PRIORITIES.join(', ')}.`,
    }),
    contactId: t.expose('contactId', { type: 'UUID', nullable: true }),
    contact: t.field({
      type: ContactObject,
      nullable: true,
      // The contacts domain's loader: every task of a page is resolved in one read, and a
      // list of tasks reads their contacts in its own statement (contactReadAhead).
      extensions: { readAhead: contactReadAhead },
      resolve: (task: ListedTask, _args, ctx) => {
        if (task.contactRead !== undefined) return contactFromColumn(task.contactRead);
        return task.contactId ? ctx.loaders.of(contactLoaders).contacts.load(task.contactId) : null;
      },
    }),
    assigneeId: t.expose('assigneeId', { type: 'UUID', description: 'The owner of the task.' }),
    originSource: t.exposeString('originSource', {
      nullable: true,
      description: '`token:<name>` when an API token created the task.',
    }),
    originEventId: t.exposeString('originEventId', { nullable: true }),
    createdAt: t.field({
      type: 'DateTime',
      resolve: async (task, _args, ctx) => (await stored(task, ctx)).createdAt,
    }),
    updatedAt: t.field({
      type: 'DateTime',
      resolve: async (task, _args, ctx) => (await stored(task, ctx)).updatedAt,
    }),
    completedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the task last moved to done; null unless it is done.',
      resolve: async (task, _args, ctx) => (await stored(task, ctx)).completedAt,
    }),
  }),
});

const TaskConnection = connectionOf('Task', TaskObject);

const CreateTaskPayload = builder.objectRef<CreateTaskResult>('CreateTaskPayload').implement({
  fields: (t) => ({
    replay: t.exposeBoolean('replay', {
      description: 'True when the origin event was seen before and no task was created.',
    }),
    task: t.field({ type: TaskObject, resolve: (result) => result.task }),
  }),
});

const title = limited({ maxLength: TEXT_MAX.title });
const word = limited({ maxLength: TEXT_MAX.word });
const origin = limited({ maxLength: TEXT_MAX.origin });

const CreateTaskInput = builder.inputType('CreateTaskInput', {
  fields: (t) => ({
    title: t.string({ extensions: title }),
    dueOn: t.field({ type: 'Date', required: false }),
    priority: t.string({ required: false, description: 'Default `normal`.', extensions: word }),
    status: t.string({ required: false, description: 'Default `open`.', extensions: word }),
    contactId: t.field({ type: 'UUID', required: false }),
    assigneeId: t.field({
      type: 'UUID',
      required: false,
      description: 'Default: the caller.',
    }),
    originSource: t.string({
      required: false,
      description: 'Ignored for an API token, whose work records `token:<name>`.',
      extensions: origin,
    }),
    originEventId: t.string({
      required: false,
      description: 'Makes the create repeatable: the same origin answers the stored task.',
      extensions: origin,
    }),
  }),
});

const UpdateTaskInput = builder.inputType('UpdateTaskInput', {
  description: 'Fields left out stay as they are; null clears dueOn and contactId.',
  fields: (t) => ({
    title: t.string({ required: false, extensions: title }),
    dueOn: t.field({ type: 'Date', required: false }),
    priority: t.string({ required: false, extensions: word }),
    status: t.string({ required: false, extensions: word }),
    contactId: t.field({ type: 'UUID', required: false }),
    assigneeId: t.field({ type: 'UUID', required: false }),
  }),
});

const TaskDeletionObject = builder.objectRef<{ id: string }>('TaskDeletion').implement({
  description: 'The task deleteTask removed.',
  fields: (t) => ({ id: t.expose('id', { type: 'UUID' }) }),
});

builder.queryFields((t) => ({
  task: t.field({
    type: TaskObject,
    description: 'A task of the workspace, whoever it is assigned to.',
    authScopes: { access: { scope: 'tasks:read' } },
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => getTask(ctx, args.id),
  }),
  tasks: t.field({
    type: TaskConnection,
    description:
      "The caller's own tasks by due day (undated last), then id. Exactly one of date, " +
      'dueBefore (strictly before) or contactId; status defaults to open, `all` lists every one.',
    authScopes: { access: { scope: 'tasks:read' } },
    args: {
      date: t.arg({ type: 'Date', required: false }),
      dueBefore: t.arg({ type: 'Date', required: false }),
      contactId: t.arg({ type: 'UUID', required: false }),
      status: t.arg.string({ required: false, extensions: word }),
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
    },
    resolve: (_root, args, ctx, info) => {
      const fields = columnsAsked(fieldsAskedOf(info, 'Task'));
      return listTasks(ctx, args, {
        ...(fields ? { fields } : {}),
        readAheads: readAheadsSelected(info, ctx, 'edges', 'node'),
      });
    },
  }),
}));

builder.mutationFields((t) => ({
  createTask: t.field({
    type: CreateTaskPayload,
    authScopes: { access: { scope: 'tasks:write' } },
    args: { input: t.arg({ type: CreateTaskInput, required: true }) },
    resolve: (_root, args, ctx) => createTask(ctx, args.input),
  }),
  updateTask: t.field({
    type: TaskObject,
    authScopes: { access: { scope: 'tasks:write' } },
    args: {
      id: t.arg({ type: 'UUID', required: true }),
      input: t.arg({ type: UpdateTaskInput, required: true }),
    },
    resolve: (_root, args, ctx) => updateTask(ctx, args.id, args.input),
  }),
  deleteTask: t.field({
    type: TaskDeletionObject,
    description:
      'Deletes a task: its assignee, its creator or a holder of erase_records (the stock ' +
      'admin) may; anyone else is refused capability_missing. Emits task.deleted to the assignee.',
    authScopes: { access: { scope: 'tasks:write' } },
    args: { id: t.arg({ type: 'UUID', required: true }) },
    extensions: costs({ cost: WRITE }),
    resolve: (_root, args, ctx) => deleteTask(ctx, args.id),
  }),
}));

/** The loader `Contact.tasks` reads for a page size when its contact's row has no tasks. */
const openTasksOfContact = (ctx: Context, first: number) =>
  ctx.loaders.of(taskLoaders).openTasksOfContact(first);

/**
 * `contact(id) { tasks }` reads the tasks in the contact's statement: the column rides on
 * the contact's row, and `Contact.tasks` answers it from there (no loader, no promise).
 * The row carries it only when every selection of the field under that contact asks the
 * same page (src/graph/read-ahead.ts), so any of them may answer from it.
 */
const openTasksReadAhead: ReadAhead<{ openTasksFirst: number }> = {
  name: 'openTasks',
  column: openTasksOfContactColumn,
  values: (args, ctx) => ({
    openTasksFirst: pageSize(args['first'] as number | null | undefined, ctx.config),
  }),
};

/** A contact as a read gave it, with its open tasks read ahead when the operation asked. */
type ContactRead = Contact & { openTasks?: unknown };

builder.objectField(ContactObject, 'tasks', (t) =>
  t.field({
    type: [TaskObject],
    description: "The contact's open tasks across every user; each names its owner in assigneeId.",
    args: { first: t.arg.int({ required: false }) },
    // One read for every contact of a page (a DataLoader): the rows are the cost.
    extensions: { ...costs({ cost: 0 }), readAhead: openTasksReadAhead },
    resolve: (contact: ContactRead, args, ctx) =>
      contact.openTasks !== undefined
        ? openTasksFromColumn(contact.openTasks)
        : openTasksOfContact(ctx, pageSize(args.first, ctx.config)).load(contact.id),
  }),
);
