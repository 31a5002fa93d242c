import { sql } from 'drizzle-orm';
import { bigint, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, sameWorkspaceRef, workspaceKey, workspaceOwned } from '../db/columns.js';
import { workspaces } from '../workspaces/tables.js';

/** People the workspace works with (SPEC 2.3). */
export const contacts = pgTable(
  'contacts',
  {
    ...workspaceOwned(),
    name: text().notNull(),
    createdAt: createdAt(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    workspaceKey(t),
    // Pages ordered by name (the default) and by creation walk these.
    index('contacts_name_idx').on(t.workspaceId, sql`lower(${t.name})`, t.id),
    index('contacts_created_idx').on(t.workspaceId, t.createdAt, t.id),
    // `q` by name fragment.
    index('contacts_name_trgm_idx').using('gin', sql`lower(${t.name}) gin_trgm_ops`),
  ],
);

/**
 * A contact's channel identities (an address, a phone number, a chat handle). One
 * (channel, key) belongs to one contact of the workspace.
 */
export const contactIdentities = pgTable(
  'contact_identities',
  {
    ...workspaceOwned(),
    contactId: uuid().notNull(),
    channel: text().notNull(),
    /** As written. */
    identifier: text().notNull(),
    /** What makes two identifiers the same (case-folded address, digits of a number). */
    identifierKey: text().notNull(),
    /** The identifier's digits, for searching numbers however they were written. */
    identifierDigits: text()
      .notNull()
      .generatedAlwaysAs(sql`regexp_replace(identifier, '[^0-9]', '', 'g')`),
    displayName: text(),
    createdAt: createdAt(),
  },
  (t) => [
    workspaceKey(t),
    sameWorkspaceRef(t, t.contactId, contacts).onDelete('cascade'),
    uniqueIndex('contact_identities_key').on(t.workspaceId, t.channel, t.identifierKey),
    index('contact_identities_contact_idx').on(t.workspaceId, t.contactId),
    index('contact_identities_channel_idx').on(t.workspaceId, t.channel, t.contactId),
    index('contact_identities_display_trgm_idx').using(
      'gin',
      sql`lower(${t.displayName}) gin_trgm_ops`,
    ),
    index('contact_identities_digits_trgm_idx').using(
      'gin',
      sql`${t.identifierDigits} gin_trgm_ops`,
    ),
  ],
);

/**
 * Per-workspace counts kept in the same transaction as the writes they count, so an
 * unfiltered `contactPage.total` is one row read, not a count of a million.
 */
export const workspaceCounts = pgTable('workspace_counts', {
  workspaceId: uuid()
    .primaryKey()
    .references(() => workspaces.id),
  contacts: bigint({ mode: 'number' }).notNull().default(0),
});

export type Contact = typeof contacts.$inferSelect;
export type ContactIdentity = typeof contactIdentities.$inferSelect;
