import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { workspaceKey, workspaceOwned } from '../db/columns.js';

/**
 * Every write's event, recorded in the write's own transaction (docs/events.md). Live
 * streams learn of them through NOTIFY at commit; webhook delivery reads them as its
 * outbox.
 */
export const events = pgTable(
  'events',
  {
    ...workspaceOwned(),
    /** `contact.created`, `task.updated`, … */
    name: text().notNull(),
    /** The record the event is about. */
    subjectId: uuid(),
    /** Who may see it: one account (task events reach their assignee), or null for all. */
    audienceUserId: uuid(),
    /** The account that made the change, when one did. */
    actorUserId: uuid(),
    data: jsonb().$type<Record<string, unknown>>().notNull().default({}),
    at: timestamp({ withTimezone: true })
      .notNull()
      .default(sql`clock_timestamp()`),
  },
  (t) => [
    workspaceKey(t),
    index('events_workspace_at_idx').on(t.workspaceId, t.at),
    // Housekeeping's sweep finds the oldest events of every workspace at once.
    index('events_at_idx').on(t.at),
    // An erasure redacts the events about the records it forgets (src/events/redact.ts).
    index('events_subject_idx').on(t.workspaceId, t.subjectId),
  ],
);

export type Event = typeof events.$inferSelect;
