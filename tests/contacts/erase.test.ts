// deleteContact (issue 28, docs/contacts.md): a contact erased with everything naming it,
// across the core and every stock plugin, in one transaction; nothing naming it stays
// readable anywhere the service serves, which the last check proves by reading every row
// of every table of the database as text.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { inboundMessage, type InboundMessageOptions } from '../support/chat-platform.js';
import { dataOf, freshWorkspaceHeaders } from '../support/contacts.js';
import { bearer, createUser, tokenFor } from '../support/factories.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';
import { NUMBER, startChatHarness, type ChatHarness } from '../plugins/chat/support.js';
import type { TestService } from '../support/service.js';

let h: ChatHarness;
let svc: TestService;

beforeAll(async () => {
  h = await startChatHarness();
  svc = h.svc;
  // A subscriber the deliveries cannot reach (internal addresses are refused): they stay
  // pending, built from the stored events at each attempt.
  await svc.db.database.sql`
    insert into webhooks (workspace_id, url, events, secret)
    values (${svc.workspace.id}, 'http://127.0.0.1:9/hook',
      ${['contact.created', 'contact.renamed', 'chat.message.received', 'contact.deleted']},
      'secret')`;
  await defineFields();
});

afterAll(() => h.stop());

export const DELETE_CONTACT = `mutation ($id: UUID!) {
  deleteContact(id: $id) { id unlinkedTaskIds }
}`;

async function defineFields(): Promise<void> {
  const define = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }`;
  for (const input of [
    { name: 'tier', label: 'Tier', kind: 'text' },
    { name: 'city', label: 'City', kind: 'text' },
    {
      name: 'visits',
      label: 'Visits',
      kind: 'repeater',
      subFields: [{ name: 'note', label: 'Note', kind: 'text' }],
    },
  ]) {
    dataOf((await svc.graph(define, { input })).body, 'defineField');
  }
}

async function graphData<T>(query: string, variables: Record<string, unknown>, field: string) {
  return dataOf<T>((await svc.graph(query, variables)).body, field);
}

/** A contact reached over chat, with a message and a stored media file, as inbound keeps them. */
async function chattingContact(name: string, peer: string) {
  const payload = inboundMessage({
    phoneNumberId: NUMBER,
    from: peer,
    profileName: name,
    type: 'text',
    text: { body: `hello, ${name} here` },
  } as InboundMessageOptions);
  expect((await h.deliver(payload)).status).toBe(200);
  const { sql } = svc.db.database;
  const [conversation] = await sql<{ id: string; contact_id: string }[]>`
    select id, contact_id from chat_conversations where peer = ${peer}`;
  const bytes = Buffer.from(`a picture of ${name}`);
  const [message] = await sql<{ id: string }[]>`
    insert into chat_messages (workspace_id, conversation_id, direction, external_id, type,
      content, sent_at, media_id, media_mime_type, media_state, media_bytes)
    values (${svc.workspace.id}, ${conversation!.id}, 'in',
      ${`wamid.${randomBytes(8).toString('hex')}`}, 'image', ${`photo of ${name}`}, now(),
      'media-1', 'image/png', 'stored', ${bytes.length})
    returning id`;
  await sql`
    insert into chat_media (workspace_id, message_id, content_type, size, sha256, bytes)
    values (${svc.workspace.id}, ${message!.id}, 'image/png', ${bytes.length},
      ${createHash('sha256').update(bytes).digest('hex')}, ${bytes})`;
  return {
    contactId: conversation!.contact_id,
    conversationId: conversation!.id,
    messageId: message!.id,
  };
}

/** Every row of every table of the database, as text, that holds `text`: table names. */
async function tablesHolding(text: string): Promise<string[]> {
  const { sql } = svc.db.database;
  const tables = await sql<{ name: string }[]>`
    select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE'`;
  const found: string[] = [];
  for (const { name } of tables) {
    const [row] = await sql.unsafe<{ n: number }[]>(
      `select count(*)::int as n from "${name}" as r where r::text ilike $1`,
      [`%${text}%`],
    );
    if ((row?.n ?? 0) > 0) found.push(name);
  }
  return found;
}

async function mediaStatus(conversationId: string, messageId: string): Promise<number> {
  const response = await svc.request(
    `/api/plugins/chat/conversations/${conversationId}/messages/${messageId}/media`,
    { headers: svc.adminHeaders },
  );
  await response.arrayBuffer();
  return response.status;
}

describe('deleteContact', () => {
  test('erases the contact, its identities, field values, entries, conversations, messages, media, notes and import links; its task stays unlinked', async () => {
    const name = 'Zebulon Quaxley';
    const chat = await chattingContact(name, '15559990001');
    const { contactId } = chat;
    const { sql } = svc.db.database;
    await graphData(
      `mutation ($id: UUID!) { addContactIdentity(contactId: $id,
        identity: { channel: "email", identifier: "zebulon@quaxley.example" }) { identity { id } } }`,
      { id: contactId },
      'addContactIdentity',
    );
    await graphData(
      `mutation ($id: UUID!) { writeContactFields(contactId: $id, values: { tier: "Zebulon's gold" }) { id } }`,
      { id: contactId },
      'writeContactFields',
    );
    await graphData(
      `mutation ($id: UUID!) { addContactFieldEntry(contactId: $id, field: "visits",
        values: { note: "met Zebulon" }) { id } }`,
      { id: contactId },
      'addContactFieldEntry',
    );
    await graphData(
      `mutation ($id: UUID!) { noteCreate(contactId: $id, body: "Zebulon likes tea") { id } }`,
      { id: contactId },
      'noteCreate',
    );
    const { task } = await graphData<{ task: { id: string } }>(
      `mutation ($id: UUID) { createTask(input: { title: "Call back", contactId: $id }) { task { id } } }`,
      { id: contactId },
      'createTask',
    );
    const [job] = await sql<{ id: string }[]>`
      insert into imports (workspace_id, file_name, format, state, columns, row_count)
      values (${svc.workspace.id}, 'people.csv', 'csv', 'committed', ${JSON.stringify(['name', 'email'])}::jsonb, 1)
      returning id`;
    await sql`
      insert into import_rows (workspace_id, import_id, line, cells, reason, contact_id)
      values (${svc.workspace.id}, ${job!.id}, 2, ${JSON.stringify([name, 'zebulon@quaxley.example'])}::jsonb,
        ${JSON.stringify({ code: 'identity_taken_by', meta: { ownerName: name } })}::jsonb, ${contactId})`;
    expect(await mediaStatus(chat.conversationId, chat.messageId)).toBe(200);
    expect(await tablesHolding('Zebulon')).not.toEqual([]);

    const erased = await graphData<{ id: string; unlinkedTaskIds: string[] }>(
      DELETE_CONTACT,
      { id: contactId },
      'deleteContact',
    );

    expect(erased).toEqual({ id: contactId, unlinkedTaskIds: [task.id] });
    const contact = await svc.graph('query ($id: UUID!) { contact(id: $id) { id } }', {
      id: contactId,
    });
    expect(contact.body.errors?.[0]?.extensions.reason).toBe('contact_not_found');
    const conversation = await svc.graph(
      'query ($id: UUID!) { chatConversation(id: $id) { id } }',
      { id: chat.conversationId },
    );
    expect(conversation.body.errors?.[0]?.extensions.reason).toBe('conversation_not_found');
    expect(await mediaStatus(chat.conversationId, chat.messageId)).toBe(404);
    const stayed = await graphData<{ id: string; contactId: string | null }>(
      'query ($id: UUID!) { task(id: $id) { id contactId } }',
      { id: task.id },
      'task',
    );
    expect(stayed).toEqual({ id: task.id, contactId: null });
    const [row] = await sql<{ contact_id: string | null; cells: string[]; reason: unknown }[]>`
      select contact_id, cells, reason from import_rows where import_id = ${job!.id}`;
    expect(row).toEqual({
      contact_id: null,
      cells: ['', ''],
      reason: { code: 'identity_taken', meta: {} },
    });
    // Nothing anywhere names the contact: not its name, its address, its messages.
    expect(await tablesHolding('Zebulon')).toEqual([]);
    expect(await tablesHolding('quaxley')).toEqual([]);
    expect(await tablesHolding('15559990001')).toEqual([]);
  });

  test('emits contact.deleted with the subject id and nothing else; the earlier events keep their ids, names and times, their data redacted', async () => {
    const { id: contactId } = await graphData<{ id: string }>(
      `mutation { createContact(input: { name: "Yolanda Prest",
        identities: [{ channel: "email", identifier: "yolanda@prest.example" }] }) { id } }`,
      {},
      'createContact',
    );
    const { sql } = svc.db.database;
    const before = await sql<{ id: string; name: string }[]>`
      select id, name from events where subject_id = ${contactId} order by at`;
    expect(before.map((e) => e.name)).toEqual(['contact.created', 'contact.identity_added']);

    await graphData(DELETE_CONTACT, { id: contactId }, 'deleteContact');

    const after = await sql<{ id: string; name: string; data: unknown }[]>`
      select id, name, data from events where subject_id = ${contactId} order by at`;
    expect(after).toEqual([
      { id: before[0]!.id, name: 'contact.created', data: { contactId, redacted: true } },
      { id: before[1]!.id, name: 'contact.identity_added', data: { contactId, redacted: true } },
      { id: expect.any(String), name: 'contact.deleted', data: { contactId } },
    ]);
    // The subscriber's pending deliveries are still owed; their bodies are built from these.
    const pending = await sql<{ event_id: string }[]>`
      select event_id from webhook_deliveries where status = 'pending'
        and event_id in ${sql(after.map((e) => e.id))}`;
    expect(pending.map((p) => p.event_id).sort()).toEqual([before[0]!.id, after[2]!.id].sort());
  });

  test('a contact of another workspace is answered as an unknown id, and stays', async () => {
    const other = await freshWorkspaceHeaders(svc);
    const { id } = dataOf<{ id: string }>(
      (
        await svc.graph(
          'mutation { createContact(input: { name: "Bea" }) { id } }',
          {},
          other.headers,
        )
      ).body,
      'createContact',
    );
    await expectAnsweredAsUnknown(
      svc,
      'deleteContact(id)',
      DELETE_CONTACT,
      (contactId) => ({ id: contactId }),
      id,
    );
    const still = await svc.graph(
      'query ($id: UUID!) { contact(id: $id) { id } }',
      { id },
      other.headers,
    );
    expect(still.body.data).toEqual({ contact: { id } });
  });

  test('a member is refused capability_missing (erase_records), and the contact stays', async () => {
    const member = await createUser(svc.db.database.db, svc.workspace, { role: 'member' });
    const headers = bearer(await tokenFor(svc.db.database.db, member));
    const { id } = await graphData<{ id: string }>(
      'mutation { createContact(input: { name: "Kept" }) { id } }',
      {},
      'createContact',
    );
    const { body } = await svc.graph(DELETE_CONTACT, { id }, headers);
    expect(body.errors?.[0]).toMatchObject({
      message: 'admin required',
      extensions: {
        code: 'UNAUTHORIZED',
        reason: 'capability_missing',
        capability: 'erase_records',
        meta: { scope: 'contacts:write', capability: 'erase_records' },
      },
    });
    expect(
      (await svc.graph('query ($id: UUID!) { contact(id: $id) { id } }', { id })).body.data,
    ).toEqual({
      contact: { id },
    });
  });

  test('contactPage.total counts one fewer once a contact is erased', async () => {
    const total = async () =>
      (await graphData<{ total: number }>('{ contactPage { total } }', {}, 'contactPage')).total;
    const { id } = await graphData<{ id: string }>(
      'mutation { createContact(input: { name: "Counted" }) { id } }',
      {},
      'createContact',
    );
    const before = await total();
    await graphData(DELETE_CONTACT, { id }, 'deleteContact');
    expect(await total()).toBe(before - 1);
  });
});
