import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * Account-change records written by operator commands (`-as`): who ran what, on which
 * account. Operator history spans workspaces, so it is not workspace-owned.
 */
export const accountRecords = pgTable(
  'account_records',
  {
    id: uuid()
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    at: timestamp({ withTimezone: true }).notNull().defaultNow(),
    /** The operator named by `-as`. */
    actor: text().notNull(),
    command: text().notNull(),
    workspaceId: uuid(),
    /** The account the change touched, when there is one. */
    subject: text(),
    detail: jsonb().$type<Record<string, unknown>>().notNull().default({}),
  },
  (t) => [index('account_records_at_idx').on(t.at)],
);

export type AccountRecord = typeof accountRecords.$inferSelect;
