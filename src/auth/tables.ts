import { sql } from 'drizzle-orm';
import { customType, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { createdAt, sameWorkspaceRef, workspaceKey, workspaceOwned } from '../db/columns.js';
import { users } from '../users/tables.js';

/** SHA-256 of a secret; the secret itself is never stored. */
export const digest = customType<{ data: Buffer }>({ dataType: () => 'bytea' });

/** The account a workspace-owned row belongs to, keyed by workspace first. */
function ownedByUser<T extends { workspaceId: never; userId: never }>(t: T) {
  return sameWorkspaceRef(t, t.userId, users).onDelete('cascade');
}

/** Browser sessions (SPEC 5): server-side, 30 days, removed hourly once expired. */
export const sessions = pgTable(
  'sessions',
  {
    ...workspaceOwned(),
    userId: uuid().notNull(),
    secretHash: digest().notNull(),
    createdAt: createdAt(),
    expiresAt: timestamp({ withTimezone: true }).notNull(),
  },
  (t) => [
    workspaceKey(t),
    ownedByUser(t as never),
    index('sessions_user_idx').on(t.workspaceId, t.userId),
    index('sessions_expires_idx').on(t.expiresAt),
  ],
);

/**
 * API tokens (SPEC 2.9). `scopes` null marks a token that predates scopes: full
 * authority, no expiry, listed by `token:list -all`.
 */
export const apiTokens = pgTable(
  'api_tokens',
  {
    ...workspaceOwned(),
    userId: uuid().notNull(),
    name: text().notNull(),
    scopes: text().array(),
    secretHash: digest().notNull(),
    createdAt: createdAt(),
    expiresAt: timestamp({ withTimezone: true }),
    revokedAt: timestamp({ withTimezone: true }),
    lastUsedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    workspaceKey(t),
    ownedByUser(t as never),
    index('api_tokens_user_idx').on(t.workspaceId, t.userId),
  ],
);

/** One-time links: an invitation to activate an account, or a password reset. */
function linkTable(name: 'invitations' | 'password_resets') {
  return pgTable(
    name,
    {
      ...workspaceOwned(),
      userId: uuid().notNull(),
      secretHash: digest().notNull(),
      createdAt: createdAt(),
      expiresAt: timestamp({ withTimezone: true }).notNull(),
      usedAt: timestamp({ withTimezone: true }),
    },
    (t) => [
      workspaceKey(t),
      ownedByUser(t as never),
      index(`${name}_user_idx`).on(t.workspaceId, t.userId),
    ],
  );
}

export const invitations = linkTable('invitations');
export const passwordResets = linkTable('password_resets');

/**
 * Attempts counted per client address in a rolling window (failed logins, reset
 * requests), shared by every server process.
 */
export const rateEvents = pgTable(
  'rate_events',
  {
    id: uuid()
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    bucket: text().notNull(),
    key: text().notNull(),
    at: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('rate_events_bucket_key_at_idx').on(t.bucket, t.key, t.at)],
);

export type Session = typeof sessions.$inferSelect;
export type ApiToken = typeof apiTokens.$inferSelect;
