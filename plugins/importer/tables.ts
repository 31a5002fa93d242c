// The importer's tables: an import and its staged rows, each with its cells and reason
// (SPEC 2.10). drizzle.config.ts points drizzle-kit here.
import { sql } from 'drizzle-orm';
import {
  boolean,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from 'drizzle-orm/pg-core';
import { createdAt, workspaceOwned } from '../../src/plugin-sdk/index.js';

/** SPEC 2.10's row reason codes (the parse worker writes the first three). */
export type RowReasonCode =
  | 'row_cell_count_mismatch'
  | 'row_quote_misplaced'
  | 'row_malformed'
  | 'row_incomplete'
  | 'contact_details_invalid'
  | 'identity_taken'
  | 'identity_taken_by'
  | 'value_kind_mismatch'
  | 'field_unknown'
  | 'field_text_refused'
  | 'identity_taken_by_several'
  | 'identities_full'
  | 'legacy_text';

/** A staged row's reason: null when none applies (SPEC 2.10). */
export type RowReason = { code: RowReasonCode; meta: Record<string, unknown> } | null;
/** As stored: a reason written before reasons were codes is its text (legacy_text). */
export type StoredReason = RowReason | string;

/**
 * An address of a staged row as its mapping judged it: the prepared identity, the
 * workspace's contact that held it then (its name and, for a merge, how many identities
 * it held), and whether a merging row adds it to its contact.
 */
export interface PlannedAddress {
  channel: string;
  identifier: string;
  identifierKey: string;
  displayName: string | null;
  holder?: string;
  holderName?: string;
  holderCount?: number;
  add?: true;
}

/**
 * What a mapping prepared of a row for the commit (docs/importer.md "Committing"): the
 * contact's name (a row creating one), every address it names, and its custom field
 * values in their stored forms by field id (written, or filled by a merge).
 */
export interface RowPlan {
  name?: string;
  addresses: PlannedAddress[];
  values?: Record<string, unknown>;
}

/** An uploaded file and where it stands (docs/importer.md has the states). */
export const imports = pgTable(
  'imports',
  {
    ...workspaceOwned(),
    fileName: text().notNull(),
    /** csv, xlsx, xls or ods. */
    format: text().notNull(),
    state: text().notNull(),
    /** The header row's cells, in order. */
    columns: jsonb().$type<string[]>().notNull(),
    rowCount: integer().notNull(),
    /** Each column's target (`name`, `identity:email`, `field:tier`) or null; null until mapped. */
    mapping: jsonb().$type<(string | null)[]>(),
    /**
     * What a row holding an existing contact's address does: `skip` (SPEC 2.10's
     * identity_taken_by) or `merge` into that contact; set with the mapping.
     */
    existingContacts: text().notNull().default('skip'),
    /**
     * What the rows' plans were judged with: the custom fields as `fieldsJudgedBy` writes
     * them. Null when no plan stands (no mapping yet, or an erasure blanked a row's): a
     * commit then judges every row again, as it does when the fields changed since.
     */
    plannedWith: text(),
    /** Contacts the commit created, rows it merged into existing contacts, rows it left out. */
    createdCount: integer(),
    mergedCount: integer(),
    skippedCount: integer(),
    committedAt: timestamp({ withTimezone: true }),
    createdBy: uuid(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    // `imports`: the workspace's imports, newest first.
    index('imports_created_idx').on(t.workspaceId, t.createdAt, t.id),
  ],
);

/** One staged row: its cells as read and its reason. */
export const importRows = pgTable(
  'import_rows',
  {
    workspaceId: uuid().notNull(),
    importId: uuid().notNull(),
    /** The file's line the row ends on (the header is line 1). */
    line: integer().notNull(),
    cells: jsonb().$type<string[]>().notNull(),
    reason: jsonb().$type<StoredReason>(),
    /**
     * The contact holding the row's address (identity_taken_by), or the one it created.
     * A mapping stores the id the commit will give the contact the row creates (or the
     * earlier row's it merges into or is held by), `contactPlanned`, read as null until the
     * import is committed: a commit that judges the row as the mapping did writes nothing.
     */
    contactId: uuid(),
    /** contactId names a contact the commit creates (read as null before the commit). */
    contactPlanned: boolean().notNull().default(false),
    /**
     * What the commit will do with the row (`create`, `merge`, `skip`), set by a mapping
     * and left as it is by a commit that judged the same (a committed import's rows read
     * it in the past tense, `created`, `merged`, `skipped`, as commits before this column's
     * `contactPlanned` stored it); null before a mapping.
     */
    outcome: text(),
    /** What the last mapping prepared of the row for the commit; null when it prepared nothing. */
    plan: jsonb().$type<RowPlan>(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.importId, t.line] }),
    foreignKey({
      name: 'import_rows_import_fk',
      columns: [t.workspaceId, t.importId],
      foreignColumns: [imports.workspaceId, imports.id],
    }).onDelete('cascade'),
    // An erased or merged contact's rows (plugins/importer/contact-data.ts).
    index('import_rows_contact_idx')
      .on(t.workspaceId, t.contactId)
      .where(sql`${t.contactId} is not null`),
  ],
);

/**
 * The work running on an import, rows done of rows: written outside the work's own
 * transaction so other requests (and processes) see it move; gone when the work ends.
 */
export const importProgress = pgTable(
  'import_progress',
  {
    workspaceId: uuid().notNull(),
    importId: uuid().notNull(),
    /** `staging` or `committing`. */
    stage: text().notNull(),
    done: integer().notNull(),
    total: integer().notNull(),
    startedAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.importId] }),
    foreignKey({
      name: 'import_progress_import_fk',
      columns: [t.workspaceId, t.importId],
      foreignColumns: [imports.workspaceId, imports.id],
    }).onDelete('cascade'),
  ],
);

export type Import = typeof imports.$inferSelect;
export type ImportProgress = typeof importProgress.$inferSelect;
export type ImportRow = typeof importRows.$inferSelect;

/**
 * An export of contacts started by `exportContacts`: the format and filters, read again
 * when its creator downloads the file, which is written from the contacts as they then
 * are (docs/importer.md "Export"). Gone an hour after it was started (a sweep).
 */
export const contactExports = pgTable(
  'contact_exports',
  {
    ...workspaceOwned(),
    /** csv or xlsx. */
    format: text().notNull(),
    /** `contactPage`'s filter arguments as given (q, channels, plugins' own). */
    filters: jsonb().$type<Record<string, unknown>>().notNull(),
    /** Who started it: the only caller its file is served to. */
    createdBy: uuid().notNull(),
    createdAt: createdAt(),
    expiresAt: timestamp({ withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    // The hourly sweep finds the expired ones.
    index('contact_exports_expires_idx').on(t.expiresAt),
  ],
);

export type ContactExport = typeof contactExports.$inferSelect;
