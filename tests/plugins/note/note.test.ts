// The stock `note` plugin (SPEC 2.12), loaded the way a deployment loads it: every stock
// plugin under plugins/, its migration from the test template.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { drizzle } from 'drizzle-orm/postgres-js';
import type { Context } from '../../../src/plugin-sdk/index.js';
import { RequestLoaders } from '../../../src/loaders.js';
import { NOTE_BODY_MAX } from '../../../plugins/note/index.js';
import { contactNotes } from '../../../plugins/note/service.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../../support/factories.js';
import { startTestService, testConfig, type TestService } from '../../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

async function contact(workspaceId = svc.workspace.id, name = 'Ada Lovelace'): Promise<string> {
  const [row] = await svc.db.database.sql<{ id: string }[]>`
    insert into contacts (workspace_id, name) values (${workspaceId}, ${name}) returning id`;
  return (row as { id: string }).id;
}

const CREATE = `mutation ($contactId: UUID!, $body: String!) {
  noteCreate(contactId: $contactId, body: $body) { id contactId body createdAt authorId }
}`;
const LIST = `query ($contactId: UUID!, $first: Int) {
  notes(contactId: $contactId, first: $first) { id body }
}`;

async function createNote(contactId: string, body: string, headers?: Record<string, string>) {
  const { body: reply } = await svc.graph(CREATE, { contactId, body }, headers);
  expect(reply.errors).toBeUndefined();
  return (reply.data as { noteCreate: { id: string } }).noteCreate;
}

describe('noteCreate', () => {
  test('adds a note to a contact and answers it', async () => {
    const contactId = await contact();
    const { body } = await svc.graph(CREATE, { contactId, body: 'Met at the conference' });
    expect(body.errors).toBeUndefined();
    const note = (body.data as { noteCreate: Record<string, unknown> }).noteCreate;
    expect(note).toEqual({
      id: expect.any(String),
      contactId,
      body: 'Met at the conference',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      authorId: svc.admin.id,
    });
  });

  test('records note.created in the same transaction', async () => {
    const contactId = await contact();
    const note = await createNote(contactId, 'Call back on Monday');
    const rows = await svc.db.database.sql`
      select name, subject_id, actor_user_id, data from events
      where workspace_id = ${svc.workspace.id} and subject_id = ${note.id}`;
    expect(rows).toEqual([
      {
        name: 'note.created',
        subject_id: note.id,
        actor_user_id: svc.admin.id,
        data: { noteId: note.id, contactId },
      },
    ]);
  });

  test('refuses an empty body with note_body_required and writes nothing', async () => {
    const contactId = await contact();
    for (const empty of ['', '   \n']) {
      const { body } = await svc.graph(CREATE, { contactId, body: empty });
      expect(body.errors?.[0]?.extensions).toMatchObject({
        code: 'VALIDATION',
        reason: 'note_body_required',
      });
      expect(body.errors?.[0]?.message).toBe('a note needs a body');
    }
    const [row] = await svc.db.database.sql`
      select count(*)::int as n from notes where contact_id = ${contactId}`;
    expect(row?.n).toBe(0);
  });

  test('refuses a body over the limit with note_body_too_long', async () => {
    const contactId = await contact();
    const { body } = await svc.graph(CREATE, { contactId, body: 'x'.repeat(NOTE_BODY_MAX + 1) });
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION',
      reason: 'note_body_too_long',
      meta: { max: NOTE_BODY_MAX },
    });
  });

  test('refuses an unknown contact with contact_not_found, recording no event', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const { body } = await svc.graph(CREATE, { contactId: missing, body: 'Hello' });
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'contact_not_found',
    });
    const [row] = await svc.db.database.sql`
      select count(*)::int as n from events
      where name = 'note.created' and data->>'contactId' = ${missing}`;
    expect(row?.n).toBe(0);
  });

  test("refuses another workspace's contact as not found", async () => {
    const other = await createWorkspace(svc.db.database.db);
    const theirs = await contact(other.id, 'Someone else');
    const { body } = await svc.graph(CREATE, { contactId: theirs, body: 'Hello' });
    expect(body.errors?.[0]?.extensions).toMatchObject({ reason: 'contact_not_found' });
    const list = await svc.graph(LIST, { contactId: theirs });
    expect(list.body.errors?.[0]?.extensions).toMatchObject({ reason: 'contact_not_found' });
  });
});

describe('notes(contactId)', () => {
  test('lists a contact’s notes newest first, bounded by first', async () => {
    const contactId = await contact();
    const a = await createNote(contactId, 'first');
    const b = await createNote(contactId, 'second');
    const c = await createNote(contactId, 'third');
    await createNote(await contact(), 'someone else’s');
    const { body } = await svc.graph(LIST, { contactId });
    expect(body.errors).toBeUndefined();
    expect((body.data as { notes: { id: string }[] }).notes.map((n) => n.id)).toEqual([
      c.id,
      b.id,
      a.id,
    ]);
    const page = await svc.graph(LIST, { contactId, first: 2 });
    expect((page.body.data as { notes: { body: string }[] }).notes.map((n) => n.body)).toEqual([
      'third',
      'second',
    ]);
  });

  test('answers an empty list for a contact without notes', async () => {
    const { body } = await svc.graph(LIST, { contactId: await contact() });
    expect(body).toEqual({ data: { notes: [] } });
  });

  test('refuses first outside 1..SVC_GRAPH_PAGE_CAP', async () => {
    const { body } = await svc.graph(LIST, { contactId: await contact(), first: 0 });
    expect(body.errors?.[0]?.extensions).toMatchObject({ reason: 'first_out_of_range' });
  });

  test('refuses an unknown contact with contact_not_found', async () => {
    const { body } = await svc.graph(LIST, { contactId: '00000000-0000-4000-8000-000000000001' });
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'contact_not_found',
    });
  });
});

describe('the notes scope area', () => {
  test('a token holding only contacts:read cannot read notes', async () => {
    const token = await tokenFor(svc.db.database.db, svc.admin, {
      scopes: ['contacts:read'],
      catalogue: svc.service.access,
    });
    const { body } = await svc.graph(LIST, { contactId: await contact() }, bearer(token));
    expect(body.errors?.[0]?.message).toBe('scope required: notes:read');
    expect(body.errors?.[0]?.extensions).toMatchObject({ reason: 'scope_missing' });
  });

  test('notes:read reads but does not write; notes:write does both', async () => {
    const contactId = await contact();
    const reader = bearer(
      await tokenFor(svc.db.database.db, svc.admin, {
        scopes: ['notes:read'],
        catalogue: svc.service.access,
      }),
    );
    const writer = bearer(
      await tokenFor(svc.db.database.db, svc.admin, {
        scopes: ['notes:write'],
        catalogue: svc.service.access,
      }),
    );
    const refused = await svc.graph(CREATE, { contactId, body: 'x' }, reader);
    expect(refused.body.errors?.[0]?.message).toBe('scope required: notes:write');
    await createNote(contactId, 'written with notes:write', writer);
    const listed = await svc.graph(LIST, { contactId }, reader);
    expect(listed.body.errors).toBeUndefined();
    expect((listed.body.data as { notes: unknown[] }).notes).toHaveLength(1);
  });

  test('the area is declared, so tokens may be minted for it', () => {
    expect(svc.service.access.areas.has('notes')).toBe(true);
  });
});

describe('Contact.notes', () => {
  // Three contacts in one operation: their notes load in one query (one DataLoader batch).
  const QUERY = `query ($a: UUID!, $b: UUID!, $c: UUID!, $first: Int) {
    a: contact(id: $a) { id notes(first: $first) { body contactId } }
    b: contact(id: $b) { id notes(first: $first) { body contactId } }
    c: contact(id: $c) { id notes(first: $first) { body contactId } }
  }`;

  test('lists each contact’s own notes, newest first, in one operation', async () => {
    const one = await contact();
    const two = await contact();
    const three = await contact();
    await createNote(one, 'one a');
    await createNote(two, 'two a');
    await createNote(one, 'one b');
    await createNote(two, 'two b');
    await createNote(one, 'one c');
    const { body } = await svc.graph(QUERY, { a: one, b: two, c: three, first: 2 });
    expect(body.errors).toBeUndefined();
    expect(body.data).toEqual({
      a: {
        id: one,
        notes: [
          { body: 'one c', contactId: one },
          { body: 'one b', contactId: one },
        ],
      },
      b: {
        id: two,
        notes: [
          { body: 'two b', contactId: two },
          { body: 'two a', contactId: two },
        ],
      },
      c: { id: three, notes: [] },
    });
  });

  test('the notes of a page of contacts load in one query per request', async () => {
    const ids = [await contact(), await contact(), await contact()];
    for (const id of ids) await createNote(id, `note of ${id}`);
    const statements: string[] = [];
    const logged = drizzle(svc.db.database.sql, {
      casing: 'snake_case',
      logger: { logQuery: (query) => void statements.push(query) },
    });
    const ctx = {
      database: { ...svc.db.database, db: logged },
      config: testConfig(),
      workspaceId: svc.workspace.id,
      actor: { workspaceId: svc.workspace.id, userId: svc.admin.id },
      loaders: new RequestLoaders(logged, svc.workspace.id),
    } as unknown as Context;
    const lists = await Promise.all(ids.map((id) => contactNotes(ctx, id, null)));
    expect(statements).toHaveLength(1);
    expect(lists.map((notes) => notes.map((n) => n.body))).toEqual(
      ids.map((id) => [`note of ${id}`]),
    );
  });

  test('a contact reached with contacts:read shows its notes without notes:read', async () => {
    const contactId = await contact();
    await createNote(contactId, 'visible through the contact');
    const token = await tokenFor(svc.db.database.db, svc.admin, {
      scopes: ['contacts:read'],
      catalogue: svc.service.access,
    });
    const { body } = await svc.graph(
      `query ($id: UUID!) { contact(id: $id) { notes { body contactId } } }`,
      { id: contactId },
      bearer(token),
    );
    expect(body.errors).toBeUndefined();
    expect(body.data).toEqual({
      contact: { notes: [{ body: 'visible through the contact', contactId }] },
    });
  });

  test('another member of the workspace sees the same notes', async () => {
    const contactId = await contact();
    await createNote(contactId, 'shared');
    const member = await createUser(svc.db.database.db, svc.workspace);
    const { body } = await svc.graph(
      LIST,
      { contactId },
      bearer(await tokenFor(svc.db.database.db, member, { catalogue: svc.service.access })),
    );
    expect((body.data as { notes: { body: string }[] }).notes).toEqual([
      expect.objectContaining({ body: 'shared' }),
    ]);
  });
});

describe('migration', () => {
  test('the notes table comes from the plugin’s own migration, recorded in its own table', async () => {
    const { sql } = svc.db.database;
    const [table] = await sql`select to_regclass('public.notes')::text as name`;
    expect(table?.name).toBe('notes');
    const [row] = await sql`select count(*)::int as n from drizzle.__drizzle_migrations_note`;
    expect(row?.n).toBe(1);
  });

  test('deleting a contact deletes its notes', async () => {
    const contactId = await contact();
    await createNote(contactId, 'goes with the contact');
    const { sql } = svc.db.database;
    await sql`delete from contacts where workspace_id = ${svc.workspace.id} and id = ${contactId}`;
    const [row] = await sql`select count(*)::int as n from notes where contact_id = ${contactId}`;
    expect(row?.n).toBe(0);
  });
});
