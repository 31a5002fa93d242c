// The fields plugin's tables. drizzle.config.ts points drizzle-kit here; the generated
// migration lives in ./drizzle. Definitions are rows, values are rows: defining or
// archiving a field never rewrites a contact.
import { sql } from 'drizzle-orm';
import {
  customType,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { contacts, createdAt, workspaceOwned } from '../../src/plugin-sdk/index.js';

/** What a kind needs beyond its name: select options, a currency, a repeater's sub fields. */
export interface FieldSettings {
  options?: string[];
  currency?: string;
  subFields?: SubField[];
}

/** One column of a repeater's entries. */
export interface SubField {
  name: string;
  label: string;
  kind: string;
  options?: string[];
  currency?: string;
}

/**
 * Any JSON value in a jsonb column. Drizzle's own jsonb parses a string it reads once more,
 * after postgres.js has parsed the column, so a stored text "12" would read back as the
 * number 12; this one takes the value as postgres.js answers it.
 */
const jsonValue = customType<{ data: unknown; driverData: unknown }>({
  dataType: () => 'jsonb',
  toDriver: (value) => JSON.stringify(value),
  fromDriver: (value) => value,
});

/** A workspace's custom field definitions (SPEC 2.7). Archived ones keep their values. */
export const fieldDefinitions = pgTable(
  'field_definitions',
  {
    ...workspaceOwned(),
    name: text().notNull(),
    label: text().notNull(),
    kind: text().notNull(),
    settings: jsonb().$type<FieldSettings>().notNull().default({}),
    /** Where `fields` lists it; `orderFields` renumbers the live ones from 0. */
    position: integer().notNull(),
    archivedAt: timestamp({ withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    // An archived definition keeps its name: defining it again takes it back.
    uniqueIndex('field_definitions_name_key').on(t.workspaceId, t.name),
  ],
);

/** One value of a contact's field (every kind but the repeater), as JSON. */
export const contactFieldValues = pgTable(
  'contact_field_values',
  {
    workspaceId: uuid().notNull(),
    contactId: uuid().notNull(),
    fieldId: uuid().notNull(),
    value: jsonValue().notNull(),
    /** The value's text, lower-cased, for substring filters on the text kinds. */
    search: text().generatedAlwaysAs(
      sql`case when jsonb_typeof(value) = 'string' then lower(value #>> '{}') end`,
    ),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.contactId, t.fieldId] }),
    foreignKey({
      name: 'contact_field_values_contact_fk',
      columns: [t.workspaceId, t.contactId],
      foreignColumns: [contacts.workspaceId, contacts.id],
    }).onDelete('cascade'),
    foreignKey({
      name: 'contact_field_values_field_fk',
      columns: [t.workspaceId, t.fieldId],
      foreignColumns: [fieldDefinitions.workspaceId, fieldDefinitions.id],
    }),
    // Equality on a value within one field. By its hash: a long text is past what a
    // btree entry may hold.
    index('contact_field_values_value_idx').on(
      t.workspaceId,
      t.fieldId,
      sql`md5(${t.value}::text)`,
    ),
    // ...and substring on a text value (trigrams).
    index('contact_field_values_search_idx').using('gin', sql`${t.search} gin_trgm_ops`),
  ],
);

/** A repeater's entries: each its own row and id, its cells as JSON by sub field name. */
export const contactFieldEntries = pgTable(
  'contact_field_entries',
  {
    ...workspaceOwned(),
    contactId: uuid().notNull(),
    fieldId: uuid().notNull(),
    cells: jsonb().$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    foreignKey({
      name: 'contact_field_entries_contact_fk',
      columns: [t.workspaceId, t.contactId],
      foreignColumns: [contacts.workspaceId, contacts.id],
    }).onDelete('cascade'),
    foreignKey({
      name: 'contact_field_entries_field_fk',
      columns: [t.workspaceId, t.fieldId],
      foreignColumns: [fieldDefinitions.workspaceId, fieldDefinitions.id],
    }),
    // A page's entries in one read, in the order they were added.
    index('contact_field_entries_contact_idx').on(
      t.workspaceId,
      t.contactId,
      t.fieldId,
      t.createdAt,
      t.id,
    ),
  ],
);

export type FieldDefinition = typeof fieldDefinitions.$inferSelect;
export type FieldEntryRow = typeof contactFieldEntries.$inferSelect;
