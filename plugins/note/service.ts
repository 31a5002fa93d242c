// Reads and writes of notes. Every query names the caller's workspace first, so another
// workspace's ids find nothing.
import { and, desc, eq } from 'drizzle-orm';
import DataLoader from 'dataloader';
import {
  contacts,
  pageSize,
  recordEvent,
  refuse,
  type Context,
  type Db,
} from '../../src/plugin-sdk/index.js';
import { notes, type Note } from './tables.js';

export const NOTE_BODY_MAX = 20_000;

/** The signed-in caller; the graph's auth scopes let no anonymous caller this far. */
function actorOf(ctx: Context) {
  if (!ctx.actor) throw refuse('authentication_required');
  return ctx.actor;
}

/** Whether `contactId` names a contact of the caller's workspace. */
async function contactExists(db: Db, workspaceId: string, contactId: string) {
  const rows = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, contactId)))
    .limit(1);
  return rows.length > 0;
}

/** `notes(contactId, first)`: newest first; an unknown contact is `contact_not_found`. */
export async function listNotes(
  ctx: Context,
  contactId: string,
  first: number | null | undefined,
): Promise<Note[]> {
  const { workspaceId } = actorOf(ctx);
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
const loaders = new WeakMap<Context, Map<number, DataLoader<string, Note[]>>>();

export function contactNotes(
  ctx: Context,
  contactId: string,
  first: number | null | undefined,
): Promise<Note[]> {
  const limit = pageSize(first, ctx.config);
  let byLimit = loaders.get(ctx);
  if (!byLimit) loaders.set(ctx, (byLimit = new Map()));
  let loader = byLimit.get(limit);
  if (!loader) {
    loader = new DataLoader((ids) => notesOfContacts(ctx, ids, limit));
    byLimit.set(limit, loader);
  }
  return loader.load(contactId);
}

async function notesOfContacts(
  ctx: Context,
  contactIds: readonly string[],
  limit: number,
): Promise<Note[][]> {
  const { workspaceId } = actorOf(ctx);
  const { sql: pg } = ctx.database;
  const rows = await pg<
    {
      workspace_id: string;
      id: string;
      contact_id: string;
      body: string;
      author_id: string | null;
      created_at: Date;
    }[]
  >`
    select n.workspace_id, n.id, n.contact_id, n.body, n.author_id, n.created_at
    from unnest(${contactIds as string[]}::uuid[]) as c(id)
    cross join lateral (
      select * from notes
      where workspace_id = ${workspaceId} and contact_id = c.id
      order by created_at desc, id desc
      limit ${limit}
    ) n`;
  const byContact = new Map<string, Note[]>(contactIds.map((id) => [id, []]));
  for (const row of rows) {
    byContact.get(row.contact_id)?.push({
      workspaceId: row.workspace_id,
      id: row.id,
      contactId: row.contact_id,
      body: row.body,
      authorId: row.author_id,
      createdAt: row.created_at,
    });
  }
  return contactIds.map((id) => byContact.get(id) ?? []);
}

/**
 * `noteCreate(contactId, body)`: the note and its `note.created` event in one transaction.
 * The contact is checked by the foreign key itself, so a contact deleted meanwhile is
 * refused the same way as an unknown one.
 */
export async function createNote(ctx: Context, contactId: string, body: string): Promise<Note> {
  const actor = actorOf(ctx);
  if (body.trim() === '') throw refuse('note_body_required');
  if (body.length > NOTE_BODY_MAX) throw refuse('note_body_too_long', { max: NOTE_BODY_MAX });
  try {
    return await ctx.database.db.transaction(async (tx) => {
      const [note] = await tx
        .insert(notes)
        .values({ workspaceId: actor.workspaceId, contactId, body, authorId: actor.userId })
        .returning();
      const created = note as Note;
      await recordEvent(tx, {
        workspaceId: actor.workspaceId,
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
