import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, workspaceKey, workspaceOwned } from '../db/columns.js';

/** Accounts. An account belongs to one workspace and holds one role or none. */
export const users = pgTable(
  'users',
  {
    ...workspaceOwned(),
    email: text().notNull(),
    name: text().notNull(),
    /** argon2id PHC string; null until an invitation is accepted. */
    passwordHash: text(),
    /** Null for an account with no role (it predates roles or was left without one). */
    role: text(),
    /** BCP 47 tag the account chose; null follows Accept-Language. */
    locale: text(),
    disabledAt: timestamp({ withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [
    workspaceKey(t),
    // Email is unique per workspace regardless of letter case.
    uniqueIndex('users_workspace_email_key').on(t.workspaceId, sql`lower(${t.email})`),
    // Sign-in looks an address up before the workspace is known.
    index('users_email_idx').on(sql`lower(${t.email})`),
  ],
);

export type User = typeof users.$inferSelect;
export type NewUser = typeof users.$inferInsert;
