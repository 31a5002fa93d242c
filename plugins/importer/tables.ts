// The importer's tables: an import and its staged rows, each with its cells and reason
// (SPEC 2.10). drizzle.config.ts points drizzle-kit here.
import {
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uuid,
} from 'drizzle-orm/pg-core';
import { createdAt, workspaceOwned } from '../../src/plugin-sdk/index.js';

/** A staged row's reason: null when none applies (SPEC 2.10). */
export type RowReason = { code: string; meta: Record<string, unknown> } | null;

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
    reason: jsonb().$type<RowReason>(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.importId, t.line] }),
    foreignKey({
      name: 'import_rows_import_fk',
      columns: [t.workspaceId, t.importId],
      foreignColumns: [imports.workspaceId, imports.id],
    }).onDelete('cascade'),
  ],
);

export type Import = typeof imports.$inferSelect;
export type ImportRow = typeof importRows.$inferSelect;
