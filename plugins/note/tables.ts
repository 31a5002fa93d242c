// The note plugin's own table. drizzle.config.ts points drizzle-kit here; the generated
// migration lives in ./drizzle and is recorded in drizzle.__drizzle_migrations_note.
import { foreignKey, index, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { contacts, createdAt, workspaceOwned } from '../../src/plugin-sdk/index.js';

/** Notes kept on a contact (SPEC 2.12). */
export const notes = pgTable(
  'notes',
  {
    // workspace_id (→ workspaces) and id (gen_random_uuid()), as every owned table.
    ...workspaceOwned(),
    contactId: uuid().notNull(),
    body: text().notNull(),
    /** The account that wrote it. */
    authorId: uuid(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    // Leads with the workspace, like the contact's own key: a note can only name a
    // contact of its own workspace. Deleting the contact deletes its notes.
    foreignKey({
      name: 'notes_contact_fk',
      columns: [t.workspaceId, t.contactId],
      foreignColumns: [contacts.workspaceId, contacts.id],
    }).onDelete('cascade'),
    // notes(contactId) and Contact.notes: one contact's notes, newest first.
    index('notes_contact_created_idx').on(t.workspaceId, t.contactId, t.createdAt, t.id),
  ],
);

export type Note = typeof notes.$inferSelect;
