import { sql, type SQL } from 'drizzle-orm';
import {
  bigint,
  index,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';
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
    // contactDuplicates's name similarity (`q` reads contact_search).
    index('contacts_name_trgm_idx').using('gin', sql`lower(${t.name}) gin_trgm_ops`),
  ],
);

/**
 * What makes two identities look like the same person's, on whatever channel they sit
 * (`contactDuplicates`, docs/contacts.md): an address (any identifier with an `@`) lower-
 * cased with its `+tag` dropped, `Ana+crm@Example.com` → `ana@example.com`; a number
 * (only digits and `+ ( ) . / -` and spaces, at least 7 digits) as `tel:` and its last 9
 * digits, so `+44 7700 900123`, `07700 900123` and a chat handle `447700900123` meet;
 * null for anything else. Immutable, so an index holds it; a read must spell it the same.
 */
export function identityMatchKey(t: {
  identifier: AnyPgColumn;
  identifierDigits: AnyPgColumn;
}): SQL<string | null> {
  return sql<string | null>`(case
    when ${t.identifier} like '%@%' then lower(regexp_replace(${t.identifier}, '[+][^@]*@', '@'))
    when ${t.identifier} ~ '^[0-9+(). /-]+$' and length(${t.identifierDigits}) >= 7
      then 'tel:' || right(${t.identifierDigits}, 9)
  end)`;
}

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
    // contactDuplicates: the other holders of each of a contact's match keys.
    index('contact_identities_match_idx')
      .on(t.workspaceId, identityMatchKey(t))
      .where(sql`${identityMatchKey(t)} is not null`),
  ],
);

/**
 * What `q` searches, one narrow row per contact (docs/performance.md, "Instant search"):
 * `sortName` is `lower(name)`, the order of a page by name; `names` the identities'
 * display names lower-cased, `digits` the identifiers' digits, each list joined by a line
 * break, so a fragment without one matches within a single value. Triggers on contacts
 * and contact_identities (drizzle/0010_contact_search_sync.sql) rewrite a contact's row in
 * the statement that changes what it holds and delete it with its contact, whichever path
 * writes; a search reads this table alone (about 100 bytes a contact) until its page of 50.
 */
export const contactSearch = pgTable(
  'contact_search',
  {
    workspaceId: uuid().notNull(),
    contactId: uuid().notNull(),
    sortName: text().notNull(),
    names: text().notNull(),
    digits: text().notNull(),
  },
  (t) => [
    // No foreign key: the triggers write and delete a row with its contact, and a key
    // would check each inserted row again (a bulk insert pays per row).
    primaryKey({ columns: [t.workspaceId, t.contactId] }),
    // Every `q`: the three lists' trigrams, each a column of one index.
    index('contact_search_trgm_idx').using(
      'gin',
      sql`${t.sortName} gin_trgm_ops`,
      sql`${t.names} gin_trgm_ops`,
      sql`${t.digits} gin_trgm_ops`,
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
