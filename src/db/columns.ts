import { sql } from 'drizzle-orm';
import { timestamp, uuid } from 'drizzle-orm/pg-core';
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

export function createdAt() {
  return timestamp({ withTimezone: true }).notNull().defaultNow();
}
