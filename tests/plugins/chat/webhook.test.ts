// The platform's webhook pair (SPEC 4.3): the handshake, the signature that never falls
// open, payloads stored once, every message type, and the contacts messages create or match.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  batch,
  inboundMessage,
  messageId,
  postWebhook,
  signBody,
  verifyWebhook,
  type InboundMessageOptions,
} from '../../support/chat-platform.js';
import { createContactVia, dataOf } from '../../support/contacts.js';
import { APP_SECRET, NUMBER, startChatHarness, VERIFY_TOKEN, type ChatHarness } from './support.js';

let h: ChatHarness;

beforeAll(async () => {
  h = await startChatHarness();
});

afterAll(() => h.stop());

let senders = 0;
/** A sender no other test writes from. */
const sender = () => `1555${String((senders += 1)).padStart(7, '0')}`;

const text = (from: string, body: string, extra: Partial<InboundMessageOptions> = {}) =>
  inboundMessage({
    phoneNumberId: NUMBER,
    from,
    profileName: 'Ada Lovelace',
    type: 'text',
    text: { body },
    ...extra,
  } as InboundMessageOptions);

const THREAD = `query ($id: UUID!) {
  chatConversation(id: $id) {
    id contact { id name }
    messages { id direction type content sentAt }
  }
}`;

/** The conversation with `peer`, by its stored row. */
async function conversationWith(peer: string): Promise<string> {
  const [row] = await h.svc.db.database.sql<{ id: string }[]>`
    select id from chat_conversations where peer = ${peer}`;
  if (!row) throw new Error(`no conversation with ${peer}`);
  return row.id;
}

async function thread(peer: string) {
  const { body } = await h.svc.graph(THREAD, { id: await conversationWith(peer) });
  return dataOf<{
    id: string;
    contact: { id: string; name: string };
    messages: { id: string; direction: string; type: string; content: string; sentAt: string }[];
  }>(body, 'chatConversation');
}

describe('GET webhook: the handshake', () => {
  test('echoes the challenge as plain text for the right token and mode', async () => {
    const answer = await verifyWebhook(h.webhookUrl, {
      via: h.via,
      verifyToken: VERIFY_TOKEN,
      challenge: '1158201444',
    });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('1158201444');
    const query = new URLSearchParams({
      'hub.mode': 'subscribe',
      'hub.verify_token': VERIFY_TOKEN,
      'hub.challenge': '7',
    });
    const response = await h.svc.request(`${h.webhookUrl}?${query}`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toBe('7');
  });

  test.each([
    ['a wrong token', { verifyToken: 'not-it' }],
    ['another mode', { verifyToken: VERIFY_TOKEN, mode: 'unsubscribe' }],
    ['a token of another length', { verifyToken: `${VERIFY_TOKEN}-longer` }],
  ])('answers 403 with no body for %s', async (_label, given) => {
    const answer = await verifyWebhook(h.webhookUrl, {
      via: h.via,
      challenge: '42',
      ...given,
    });
    expect(answer.status).toBe(403);
    expect(answer.text).toBe('');
  });
});

describe('POST webhook: the signature', () => {
  const payload = () => JSON.stringify(text(sender(), 'signed?'));

  test.each([
    ['missing', null],
    ['malformed', 'sha256=xyz'],
    ['of another algorithm', `sha1=${'0'.repeat(40)}`],
    ['wrong', signBody('another secret', '{}')],
  ])('a %s signature answers 403 with no body and stores nothing', async (_label, signature) => {
    const before = await messageCount();
    const answer = await postWebhook(h.webhookUrl, payload(), {
      appSecret: APP_SECRET,
      via: h.via,
      signature,
    });
    expect(answer).toEqual({ status: 403, text: '' });
    expect(await messageCount()).toBe(before);
  });

  test('a signature over other bytes than those sent is refused', async () => {
    const body = payload();
    const answer = await postWebhook(h.webhookUrl, body.replace('signed?', 'signed!'), {
      appSecret: APP_SECRET,
      via: h.via,
      signature: signBody(APP_SECRET, body),
    });
    expect(answer.status).toBe(403);
  });

  test('an unreadable payload answers 400 with no body', async () => {
    for (const body of ['not json', '[]', '{"object":"whatsapp_business_account"}']) {
      const answer = await postWebhook(h.webhookUrl, body, { appSecret: APP_SECRET, via: h.via });
      expect(answer).toEqual({ status: 400, text: '' });
    }
  });
});

async function messageCount(): Promise<number> {
  const [row] = await h.svc.db.database.sql<{ n: number }[]>`
    select count(*)::int as n from chat_messages`;
  return row!.n;
}

describe('inbound messages', () => {
  test('a new sender becomes a contact named by its profile, with a conversation and the message', async () => {
    const from = sender();
    const answer = await h.deliver(text(from, 'Hello there', { timestamp: 1_767_225_600 }));
    expect(answer).toEqual({ status: 200, text: '' });
    const found = await thread(from);
    expect(found.contact.name).toBe('Ada Lovelace');
    expect(found.messages).toEqual([
      {
        id: expect.any(String),
        direction: 'in',
        type: 'text',
        content: 'Hello there',
        sentAt: '2026-01-01T00:00:00.000Z',
      },
    ]);
    // The contact holds the sender's chat identity and its phone number.
    const { body } = await h.svc.graph(
      'query ($id: UUID!) { contact(id: $id) { identities { channel identifier } } }',
      { id: found.contact.id },
    );
    expect(dataOf<{ identities: unknown[] }>(body, 'contact').identities).toEqual(
      expect.arrayContaining([
        { channel: 'chat', identifier: from },
        { channel: 'phone', identifier: `+${from}` },
      ]),
    );
  });

  test('a sender whose phone number a contact holds is that contact', async () => {
    const from = sender();
    const known = await createContactVia(h.svc, 'Known Person', [
      { channel: 'phone', identifier: `+${from}` },
    ]);
    expect((await h.deliver(text(from, 'It is me'))).status).toBe(200);
    expect((await thread(from)).contact).toEqual({ id: known.id, name: 'Known Person' });
  });

  test('a second message from the sender joins the same conversation and contact', async () => {
    const from = sender();
    await h.deliver(text(from, 'one'));
    await h.deliver(text(from, 'two', { profileName: 'Renamed Since' }));
    const found = await thread(from);
    expect(found.contact.name).toBe('Ada Lovelace');
    expect(found.messages.map((m) => m.content).sort()).toEqual(['one', 'two']);
  });

  test('a redelivered message is stored once, even when two arrive at the same time', async () => {
    const from = sender();
    const payload = text(from, 'only once', { id: messageId() });
    const answers = await Promise.all([h.deliver(payload), h.deliver(payload)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect((await h.deliver(payload)).status).toBe(200);
    expect((await thread(from)).messages).toHaveLength(1);
    const [contacts] = await h.svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from contact_identities where identifier = ${from}`;
    expect(contacts!.n).toBe(1);
  });

  test('a batch of several messages is stored whole', async () => {
    const [a, b] = [sender(), sender()];
    const answer = await h.deliver(batch(text(a, 'from a'), text(b, 'from b')));
    expect(answer.status).toBe(200);
    expect((await thread(a)).messages[0]?.content).toBe('from a');
    expect((await thread(b)).messages[0]?.content).toBe('from b');
  });

  const media = { id: '', mime_type: 'image/jpeg', sha256: 'c2hh' };
  test.each([
    ['text', { type: 'text', text: { body: 'plain words' } }, 'plain words'],
    ['image', { type: 'image', image: { ...media, id: 'm1', caption: 'a cat' } }, 'a cat'],
    ['audio', { type: 'audio', audio: { ...media, id: 'm2', mime_type: 'audio/ogg' } }, ''],
    ['video', { type: 'video', video: { ...media, id: 'm3', caption: 'clip' } }, 'clip'],
    [
      'document',
      { type: 'document', document: { ...media, id: 'm4', filename: 'offer.pdf' } },
      'offer.pdf',
    ],
    ['sticker', { type: 'sticker', sticker: { ...media, id: 'm5', mime_type: 'image/webp' } }, ''],
    [
      'location',
      { type: 'location', location: { latitude: 51.5, longitude: -0.12, name: 'Office' } },
      'Office',
    ],
    [
      'contacts',
      {
        type: 'contacts',
        contacts: [
          { name: { formatted_name: 'Bea Card' }, phones: [{ phone: '+1 555', type: 'CELL' }] },
        ],
      },
      'Bea Card',
    ],
    [
      'interactive',
      {
        type: 'interactive',
        interactive: { type: 'button_reply', button_reply: { id: 'y', title: 'Yes please' } },
      },
      'Yes please',
    ],
    [
      'interactive',
      {
        type: 'interactive',
        interactive: {
          type: 'list_reply',
          list_reply: { id: 't', title: 'Tuesday', description: 'am' },
        },
      },
      'Tuesday',
    ],
    ['button', { type: 'button', button: { text: 'Stop', payload: 'STOP' } }, 'Stop'],
    ['reaction', { type: 'reaction', reaction: { message_id: 'wamid.x', emoji: '👍' } }, '👍'],
    ['unsupported', { type: 'unsupported' }, ''],
  ])('a %s message is stored with its type and content', async (type, content, shown) => {
    const from = sender();
    const answer = await h.deliver(
      inboundMessage({
        phoneNumberId: NUMBER,
        from,
        profileName: 'Typed',
        ...content,
      } as InboundMessageOptions),
    );
    expect(answer.status).toBe(200);
    const [message] = (await thread(from)).messages;
    expect(message).toMatchObject({ type, content: shown, direction: 'in' });
  });

  test('a page of conversations lists each one’s own newest messages', async () => {
    const peers = [sender(), sender(), sender()];
    // Later than any other test's messages, so these three lead the page.
    const later = Math.floor(Date.now() / 1000) + 86_400;
    for (const [i, peer] of peers.entries()) {
      await h.deliver(text(peer, `first of ${i}`, { timestamp: later + i }));
      await h.deliver(text(peer, `second of ${i}`, { timestamp: later + 100 + i }));
    }
    const { body } = await h.svc.graph(
      '{ chatConversations(first: 3) { contact { name } messages(first: 1) { content } } }',
      {},
    );
    expect(
      dataOf<{ messages: { content: string }[] }[]>(body, 'chatConversations').map((c) =>
        c.messages.map((m) => m.content),
      ),
    ).toEqual([['second of 2'], ['second of 1'], ['second of 0']]);
  });

  test('a payload for a number no workspace holds is answered 200 and stored nowhere', async () => {
    const before = await messageCount();
    const answer = await h.deliver(
      inboundMessage({
        phoneNumberId: '999',
        from: sender(),
        profileName: 'X',
        type: 'text',
        text: { body: 'lost' },
      }),
    );
    expect(answer.status).toBe(200);
    expect(await messageCount()).toBe(before);
  });

  test('a failure to store answers 500 so the platform delivers again, then stores it once', async () => {
    const from = sender();
    const payload = text(from, 'retry me', { id: messageId() });
    const { sql } = h.svc.db.database;
    await sql.unsafe(`
      create function refuse_chat() returns trigger language plpgsql as $$
      begin raise exception 'storage down'; end $$;
      create trigger refuse_chat before insert on chat_messages
        for each row execute function refuse_chat();`);
    try {
      expect(await h.deliver(payload)).toEqual({ status: 500, text: '' });
    } finally {
      await sql.unsafe('drop trigger refuse_chat on chat_messages; drop function refuse_chat();');
    }
    expect(
      await h.svc.db.database.sql`select 1 from chat_conversations where peer = ${from}`,
    ).toHaveLength(0);
    expect((await h.deliver(payload)).status).toBe(200);
    expect((await thread(from)).messages).toHaveLength(1);
  });
});
