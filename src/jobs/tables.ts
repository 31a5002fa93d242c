import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { createdAt, workspaceKey, workspaceOwned } from '../db/columns.js';

/**
 * Jobs of the kinds plugins define with `defineJob` (docs/plugins.md, "Background jobs"):
 * enqueued in the caller's transaction, claimed by the runner of src/jobs/runner.ts. A
 * job that ran is deleted; one that ran out of retries stays `failed` with its error until
 * housekeeping removes it (JOB_FAILED_KEEP_MS).
 */
export const jobs = pgTable(
  'jobs',
  {
    ...workspaceOwned(),
    kind: text().notNull(),
    payload: jsonb().$type<unknown>().notNull(),
    /** Due at; a claim pushes it a lease ahead. */
    runAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    /** Claims so far: each claim counts one, and fences the outcome it may write. */
    attempts: integer().notNull().default(0),
    /** pending or failed. */
    status: text().notNull().default('pending'),
    lastError: text(),
    createdAt: createdAt(),
  },
  (t) => [
    workspaceKey(t),
    index('jobs_due_idx')
      .on(t.kind, t.runAt)
      .where(sql`${t.status} = 'pending'`),
    index('jobs_failed_idx')
      .on(t.createdAt)
      .where(sql`${t.status} = 'failed'`),
  ],
);

export type Job = typeof jobs.$inferSelect;
