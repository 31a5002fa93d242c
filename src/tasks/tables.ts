import { sql } from 'drizzle-orm';
import { date, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { contacts } from '../contacts/tables.js';
import { createdAt, sameWorkspaceRef, workspaceKey, workspaceOwned } from '../db/columns.js';
import { users } from '../users/tables.js';

/** Work owned by one account, optionally about a contact (SPEC 2.4). */
export const tasks = pgTable(
  'tasks',
  {
    ...workspaceOwned(),
    title: text().notNull(),
    dueOn: date({ mode: 'string' }),
    status: text().notNull().default('open'),
    priority: text().notNull().default('normal'),
    contactId: uuid(),
    /** The owner (`assignee_id` in the agent tools). */
    assigneeId: uuid().notNull(),
    createdBy: uuid(),
    /** `token:<name>` when an API token created the task. */
    originSource: text(),
    originEventId: text(),
    createdAt: createdAt(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    workspaceKey(t),
    sameWorkspaceRef(t, t.contactId, contacts),
    sameWorkspaceRef(t, t.assigneeId, users),
    // A create carrying an origin event is made once (replay).
    uniqueIndex('tasks_origin_key')
      .on(t.workspaceId, t.originSource, t.originEventId)
      .where(sql`${t.originEventId} is not null`),
    // `tasks(date:|dueBefore:)` for one assignee, by status.
    index('tasks_assignee_due_idx').on(t.workspaceId, t.assigneeId, t.status, t.dueOn, t.id),
    // `tasks(contactId:)` and `Contact.tasks`.
    index('tasks_contact_idx').on(t.workspaceId, t.contactId, t.status, t.dueOn, t.id),
  ],
);

export type Task = typeof tasks.$inferSelect;
