// Reads and writes of notes. Every query names the caller's workspace first, so another
// workspace's ids find nothing.
import { and, desc, eq, sql } from 'drizzle-orm';
import {
  contactExists,
  loaderFamily,
  pageSize,
  recordEvent,
  refuse,
  signedIn,
  type Context,
  type Db,
} from '../../src/plugin-sdk/index.js';
import { notes, type Note } from './tables.js';

export const NOTE_BODY_MAX = 20_000;

/** `notes(contactId, first)`: newest first; an unknown contact is `contact_not_found`. */
export async function listNotes(
  ctx: Context,
  contactId: string,
  first: number | null | undefined,
): Promise<Note[]> {
  const { workspaceId } = signedIn(ctx);
  const limit = pageSize(first, ctx.config);
  const { db } = ctx.database;
  const rows = await db
    .select()
    .from(notes)
    .where(and(eq(notes.workspaceId, workspaceId), eq(notes.contactId, contactId)))
    .orderBy(desc(notes.createdAt), desc(notes.id))
    .limit(limit);
  // Only an empty answer needs the second read: a note implies its contact (foreign key).
  if (rows.length === 0 && !(await contactExists(db, workspaceId, contactId))) {
    throw refuse('contact_not_found');
  }
  return rows;
}

/**
 * `Contact.notes(first)`: one loader per request and page size, so a page of contacts
 * reads its notes in one query (a lateral join walking notes_contact_created_idx once per
 * contact, each bounded by the page size).
 */
export function contactNotes(
  ctx: Context,
  contactId: string,
  first: number | null | undefined,
): Promise<Note[]> {
  return ctx.loaders.of(noteLoaders).notesOfContact(pageSize(first, ctx.config)).load(contactId);
}

/** A request's note loaders (the SDK's `ctx.loaders.of`). */
function noteLoaders(db: Db, workspaceId: string) {
  return {
    notesOfContact: loaderFamily(
      (contactIds, limit: number) => notesOfContacts(db, workspaceId, contactIds, limit),
      (note) => note.contactId,
    ),
  };
}

interface NoteRow extends Record<string, unknown> {
  workspace_id: string;
  id: string;
  contact_id: string;
  body: string;
  author_id: string | null;
  created_at: string | Date;
}

async function notesOfContacts(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
  limit: number,
): Promise<Note[]> {
  const rows = await db.execute<NoteRow>(sql`
    select n.workspace_id, n.id, n.contact_id, n.body, n.author_id, n.created_at
    from unnest(${`{${contactIds.join(',')}}`}::uuid[]) as c(id)
    cross join lateral (
      select * from notes
      where workspace_id = ${workspaceId} and contact_id = c.id
      order by created_at desc, id desc
      limit ${limit}
    ) n`);
  return rows.map((row) => ({
    workspaceId: row.workspace_id,
    id: row.id,
    contactId: row.contact_id,
    body: row.body,
    authorId: row.author_id,
    createdAt: new Date(row.created_at),
  }));
}

/**
 * `noteCreate(contactId, body)`: the note and its `note.created` event in one transaction.
 * The contact is checked by the foreign key itself, so a contact deleted meanwhile is
 * refused the same way as an unknown one.
 */
export async function createNote(ctx: Context, contactId: string, body: string): Promise<Note> {
  const { actor, workspaceId } = signedIn(ctx);
  if (body.trim() === '') throw refuse('note_body_required');
  if (body.length > NOTE_BODY_MAX) throw refuse('note_body_too_long', { max: NOTE_BODY_MAX });
  try {
    return await ctx.database.db.transaction(async (tx) => {
      const [note] = await tx
        .insert(notes)
        .values({ workspaceId, contactId, body, authorId: actor.userId })
        .returning();
      const created = note as Note;
      await recordEvent(tx, {
        workspaceId,
        name: 'note.created',
        subjectId: created.id, // recordEvent adds it to data as `noteId`
        actorUserId: actor.userId,
        data: { contactId },
      });
      return created;
    });
  } catch (error) {
    if (isContactViolation(error)) throw refuse('contact_not_found');
    throw error;
  }
}

/** A foreign-key violation of notes_contact_fk, as postgres.js raises it (or drizzle wraps it). */
function isContactViolation(error: unknown): boolean {
  for (let e = error; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const { code, constraint_name } = e as { code?: string; constraint_name?: string };
    if (code === '23503' && constraint_name === 'notes_contact_fk') return true;
  }
  return false;
}
