// The chat plugin's ids from another workspace (B's conversation), answered exactly as a
// made-up id; nothing is sent to the platform for it.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startChatHarness, type ChatHarness } from '../plugins/chat/support.js';
import { freshWorkspaceHeaders } from '../support/contacts.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';

let h: ChatHarness;
let b: Record<string, string>;
let bConversation: string;

beforeAll(async () => {
  h = await startChatHarness();
  const other = await freshWorkspaceHeaders(h.svc);
  b = other.headers;
  const { sql } = h.svc.db.database;
  const [contact] = await sql<{ id: string }[]>`
    insert into contacts (workspace_id, name) values (${other.workspaceId}, 'Bea') returning id`;
  const [conversation] = await sql<{ id: string }[]>`
    insert into chat_conversations (workspace_id, contact_id, peer, phone_number_id, last_message_at)
    values (${other.workspaceId}, ${contact!.id}, '15550001111', '2000', now()) returning id`;
  bConversation = conversation!.id;
  await sql`
    insert into chat_messages (workspace_id, conversation_id, direction, external_id, type, content, sent_at)
    values (${other.workspaceId}, ${bConversation}, 'in', 'wamid.b', 'text', 'for B only', now())`;
});

afterAll(() => h.stop());

describe('conversation ids of another workspace', () => {
  test("chatConversation(id) and chatConversations(before) with B's conversation", async () => {
    const before = await h.svc.graph('{ chatConversations { id } }', {}, b);
    await expectAnsweredAsUnknown(
      h.svc,
      'chatConversation(id)',
      'query ($id: UUID!) { chatConversation(id: $id) { id messages { content } } }',
      (id) => ({ id }),
      bConversation,
    );
    await expectAnsweredAsUnknown(
      h.svc,
      'chatConversations(before)',
      'query ($id: UUID) { chatConversations(before: $id) { id } }',
      (id) => ({ id }),
      bConversation,
    );
    expect((await h.svc.graph('{ chatConversations { id } }', {}, b)).body).toEqual(before.body);
  });

  test("chatSendMessage(conversationId) with B's conversation sends nothing", async () => {
    await expectAnsweredAsUnknown(
      h.svc,
      'chatSendMessage(conversationId)',
      'mutation ($id: UUID!) { chatSendMessage(conversationId: $id, text: "hello") { id } }',
      (id) => ({ id }),
      bConversation,
    );
    expect(h.platform.sent).toHaveLength(0);
  });
});
