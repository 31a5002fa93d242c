// Replies (chatSendMessage) and their delivery statuses (SPEC 3): sent through the
// platform's send endpoint, refused with its reasons, and moved by statuses that arrive
// out of order without ever going backwards.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import {
  inboundMessage,
  RECIPIENT_NOT_ALLOWED,
  statusUpdate,
  windowClosedError,
} from '../../support/chat-platform.js';
import { dataOf, expectReason } from '../../support/contacts.js';
import { holdTable, waiterOn } from '../../support/locks.js';
import { NUMBER, startChatHarness, type ChatHarness } from './support.js';

let h: ChatHarness;

beforeAll(async () => {
  h = await startChatHarness();
});

afterAll(() => h.stop());

beforeEach(() => h.platform.reset());

let senders = 0;

/** A conversation opened by a new sender's message: its id and the sender. */
async function conversation(): Promise<{ id: string; peer: string }> {
  const peer = `1444${String((senders += 1)).padStart(7, '0')}`;
  const answer = await h.deliver(
    inboundMessage({
      phoneNumberId: NUMBER,
      from: peer,
      profileName: 'Cy',
      type: 'text',
      text: { body: 'hi' },
    }),
  );
  expect(answer.status).toBe(200);
  const [row] = await h.svc.db.database.sql<{ id: string }[]>`
    select id from chat_conversations where peer = ${peer}`;
  return { id: row!.id, peer };
}

const SEND = `mutation ($c: UUID!, $t: String!) {
  chatSendMessage(conversationId: $c, text: $t) {
    id direction type content status statusError { code title details }
  }
}`;

interface Reply {
  id: string;
  status: string | null;
  statusError: { code: number | null; title: string; details: string | null } | null;
}

async function reply(conversationId: string, text = 'Thanks, on it') {
  const { body } = await h.svc.graph(SEND, { c: conversationId, t: text });
  return dataOf<Reply & { direction: string; content: string }>(body, 'chatSendMessage');
}

async function messageOf(id: string): Promise<Reply> {
  const [row] = await h.svc.db.database.sql<{ conversation_id: string }[]>`
    select conversation_id from chat_messages where id = ${id}`;
  const { body } = await h.svc.graph(
    `query ($id: UUID!) { chatConversation(id: $id) { messages { id status statusError { code title details } } } }`,
    { id: row!.conversation_id },
  );
  return dataOf<{ messages: Reply[] }>(body, 'chatConversation').messages.find((m) => m.id === id)!;
}

/** Posts a delivery status for the reply the platform knows as `platformId`. */
async function status(
  peer: string,
  platformId: string,
  value: 'sent' | 'delivered' | 'read' | 'failed',
  errors?: ReturnType<typeof windowClosedError>[],
) {
  const answer = await h.deliver(
    statusUpdate({
      phoneNumberId: NUMBER,
      messageId: platformId,
      recipientId: peer,
      status: value,
      ...(errors ? { errors } : {}),
    }),
  );
  expect(answer.status).toBe(200);
}

describe('chatSendMessage', () => {
  test('sends the text from the workspace’s number with its token and stores the reply', async () => {
    const { id, peer } = await conversation();
    const sent = await reply(id, '  Thanks, on it  ');
    expect(sent).toMatchObject({
      direction: 'out',
      type: 'text',
      content: 'Thanks, on it',
      status: 'accepted',
      statusError: null,
    });
    const [request] = h.platform.sent;
    expect(request).toMatchObject({
      phoneNumberId: NUMBER,
      authorization: `Bearer ${h.platform.accessToken}`,
      body: {
        messaging_product: 'whatsapp',
        to: peer,
        type: 'text',
        text: { body: 'Thanks, on it' },
      },
    });
    const { body } = await h.svc.graph(
      '{ chatConversations(first: 1) { id lastMessage { id content direction } } }',
      {},
    );
    expect(dataOf<unknown[]>(body, 'chatConversations')[0]).toEqual({
      id,
      lastMessage: { id: sent.id, content: 'Thanks, on it', direction: 'out' },
    });
  });

  test('an empty text is message_content_required', async () => {
    const { id } = await conversation();
    for (const text of ['', '   \n ']) {
      expectReason(
        (await h.svc.graph(SEND, { c: id, t: text })).body,
        'VALIDATION',
        'message_content_required',
      );
    }
    expect(h.platform.sent).toHaveLength(0);
  });

  test('a made-up conversation is conversation_not_found', async () => {
    const { body } = await h.svc.graph(SEND, {
      c: '6f0c5a2e-1d2b-4c3d-8e9f-0a1b2c3d4e5f',
      t: 'hello',
    });
    expectReason(body, 'NOT_FOUND', 'conversation_not_found');
  });

  test('a refusal by the platform is upstream_failed with its code and title; nothing is stored', async () => {
    const { id } = await conversation();
    h.platform.failNextSends(1, RECIPIENT_NOT_ALLOWED);
    const { body } = await h.svc.graph(SEND, { c: id, t: 'hello' });
    expectReason(body, 'CONFLICT', 'upstream_failed', {
      code: 131030,
      title: 'Recipient phone number not in allowed list',
    });
    const [outbound] = await h.svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from chat_messages where conversation_id = ${id} and direction = 'out'`;
    expect(outbound!.n).toBe(0);
  });

  test('a platform outage is upstream_failed; the next send after it goes through', async () => {
    const { id } = await conversation();
    h.platform.setDown(true);
    try {
      const { body } = await h.svc.graph(SEND, { c: id, t: 'hello' });
      expect(body.errors?.[0]?.extensions).toMatchObject({
        code: 'CONFLICT',
        reason: 'upstream_failed',
      });
    } finally {
      h.platform.setDown(false);
    }
    expect((await reply(id)).status).toBe('accepted');
  });
});

describe('delivery status', () => {
  test('moves sent → delivered → read, publishing each change', async () => {
    const { id, peer } = await conversation();
    const sent = await reply(id);
    const platformId = h.platform.sent[0]!.messageId!;
    for (const value of ['sent', 'delivered', 'read'] as const) {
      await status(peer, platformId, value);
      expect((await messageOf(sent.id)).status).toBe(value);
    }
    const events = await h.svc.db.database.sql<{ status: string }[]>`
      select data->>'status' as status from events
      where name = 'chat.message.status' and data->>'message_id' = ${sent.id} order by at`;
    expect(events.map((e) => e.status)).toEqual(['sent', 'delivered', 'read']);
  });

  test('never moves backwards: a sent or delivered after read changes nothing', async () => {
    const { id, peer } = await conversation();
    const sent = await reply(id);
    const platformId = h.platform.sent[0]!.messageId!;
    await status(peer, platformId, 'read');
    await status(peer, platformId, 'sent');
    await status(peer, platformId, 'delivered');
    expect((await messageOf(sent.id)).status).toBe('read');
    const [events] = await h.svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from events
      where name = 'chat.message.status' and data->>'message_id' = ${sent.id}`;
    expect(events!.n).toBe(1);
  });

  test('a reply outside the 24-hour window shows failed with the platform’s explanation', async () => {
    const { id, peer } = await conversation();
    const sent = await reply(id, 'Are you still there?');
    const platformId = h.platform.sent[0]!.messageId!;
    await status(peer, platformId, 'failed', [windowClosedError()]);
    expect(await messageOf(sent.id)).toEqual({
      id: sent.id,
      status: 'failed',
      statusError: {
        code: 131047,
        title: 'Re-engagement message',
        details:
          'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
      },
    });
  });

  test('a status that arrives before the reply is stored is applied when it is', async () => {
    const { id, peer } = await conversation();
    // The send's transaction waits on the conversation after the platform has answered.
    const lock = holdTable(h.svc, 'chat_conversations');
    await lock.held;
    const sending = h.svc.graph(SEND, { c: id, t: 'Quick one' });
    await waiterOn(h.svc, 'chat_conversations');
    const platformId = h.platform.sent[0]!.messageId!;
    await status(peer, platformId, 'delivered');
    await lock.release();
    const sent = dataOf<Reply>((await sending).body, 'chatSendMessage');
    expect(sent.status).toBe('delivered');
    const [early] = await h.svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from chat_early_statuses where external_id = ${platformId}`;
    expect(early!.n).toBe(0);
  });
});
