import { sql } from 'drizzle-orm';
import { foreignKey, primaryKey, timestamp, uuid, type AnyPgColumn } from 'drizzle-orm/pg-core';
import { workspaces } from '../workspaces/tables.js';

/**
 * Columns every workspace-owned table starts with. The workspace id leads each primary
 * key, unique constraint and foreign key, so a table can be distributed by workspace.
 */
export function workspaceOwned() {
  return {
    workspaceId: uuid()
      .notNull()
      .references(() => workspaces.id),
    id: uuid()
      .notNull()
      .default(sql`gen_random_uuid()`),
  };
}

/** The primary key of a workspace-owned table: its workspace first, then its id. */
export function workspaceKey(t: { workspaceId: AnyPgColumn; id: AnyPgColumn }) {
  return primaryKey({ columns: [t.workspaceId, t.id] });
}

/**
 * A reference from `column` of a workspace-owned row to a row of `target` in the same
 * workspace, keyed by workspace first like the primary key it points at.
 */
export function sameWorkspaceRef(
  t: { workspaceId: AnyPgColumn },
  column: AnyPgColumn,
  target: { workspaceId: AnyPgColumn; id: AnyPgColumn },
) {
  return foreignKey({
    columns: [t.workspaceId, column],
    foreignColumns: [target.workspaceId, target.id],
  });
}

export function createdAt() {
  return timestamp({ withTimezone: true }).notNull().defaultNow();
}
