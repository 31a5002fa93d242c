// The chat plugin's subscriptions over real Server-Sent Events (SPEC 4.2, 6, 8.1):
// `chatMessageReceived(conversationId)` streams the arrivals of one thread, and
// `chatConversationEvent` names the thread that changed — an inbound message, a delivery
// status of a reply, a downloaded file. Both need chat:read, reach only their workspace and
// take one of the caller's stream slots.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  inboundMessage,
  statusUpdate,
  windowClosedError,
  type WebhookPayload,
} from '../../support/chat-platform.js';
import { dataOf } from '../../support/contacts.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../../support/factories.js';
import type { TestService } from '../../support/service.js';
import { CORE_EVENT, openStream, type SseStream } from '../../events/sse.js';
import { NUMBER, startChatHarness, type ChatHarness } from './support.js';

const KEY_HEX = randomBytes(32).toString('hex');
const NUMBER_B = '3000200030004000';

const CONNECT = `mutation ($phoneNumberId: String!, $accessToken: String!) {
  chatConnect(phoneNumberId: $phoneNumberId, accessToken: $accessToken)
}`;
const SEND = `mutation ($conversationId: UUID!, $text: String!) {
  chatSendMessage(conversationId: $conversationId, text: $text) { id status }
}`;
const CONVERSATION_EVENT = 'subscription { chatConversationEvent { conversationId name at } }';
const messageReceived = (conversationId: string) =>
  `subscription { chatMessageReceived(conversationId: "${conversationId}") { id conversationId content sentAt direction } }`;

type Headers = Record<string, string>;

interface ConversationEvent {
  conversationId: string;
  name: string;
  at: string;
}

interface Arrival {
  id: string;
  conversationId: string;
  content: string;
  sentAt: string;
  direction: string;
}

let chat: ChatHarness;
let svc: TestService;
let workspaceB: string;
let adminB: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  chat = await startChatHarness({ env: { SVC_CHAT_CREDENTIALS_KEY: KEY_HEX } });
  svc = chat.svc;
  const db = svc.db.database.db;
  // The first workspace keeps the environment's number as its own connection, so a second
  // workspace (which ends the environment's single-workspace line) can be made beside it.
  const connect = (phoneNumberId: string, headers: Headers) =>
    svc.graph(CONNECT, { phoneNumberId, accessToken: chat.platform.accessToken }, headers);
  expect(dataOf<boolean>((await connect(NUMBER, svc.adminHeaders)).body, 'chatConnect')).toBe(true);
  const b = await createWorkspace(db);
  workspaceB = b.id;
  adminB = await createUser(db, b, { role: 'admin' });
  expect(
    dataOf<boolean>((await connect(NUMBER_B, await headersOf(adminB))).body, 'chatConnect'),
  ).toBe(true);
});

afterAll(() => chat?.stop());

/** A new token of `user` (every area unless `scopes` narrows it). */
async function headersOf(
  user: Awaited<ReturnType<typeof createUser>>,
  scopes: string[] | null = null,
): Promise<Headers> {
  return bearer(
    await tokenFor(svc.db.database.db, user, { scopes, catalogue: svc.service.access }),
  );
}

/** A fresh admin of the first workspace, so each test has its own stream slots. */
async function reader(scopes: string[] | null = null): Promise<Headers> {
  return headersOf(await createUser(svc.db.database.db, svc.workspace, { role: 'admin' }), scopes);
}

const peer = () => `4479${randomBytes(4).readUInt32BE()}`;

function text(from: string, body: string, phoneNumberId = NUMBER, timestamp?: Date) {
  return inboundMessage({
    phoneNumberId,
    from,
    profileName: 'Ada Lovelace',
    type: 'text',
    text: { body },
    ...(timestamp ? { timestamp } : {}),
  });
}

async function delivered(payload: WebhookPayload): Promise<void> {
  expect(await chat.deliver(payload)).toEqual({ status: 200, text: '' });
}

/** The conversation of `workspaceId` with `from`. */
async function conversationWith(from: string, workspaceId = svc.workspace.id): Promise<string> {
  const [row] = await svc.db.database.sql<{ id: string }[]>`
    select id from chat_conversations where workspace_id = ${workspaceId} and peer = ${from}`;
  if (!row) throw new Error(`no conversation with ${from}`);
  return row.id;
}

/** The stored inbound message with this text. */
async function messageWith(content: string): Promise<{ id: string; conversation_id: string }> {
  const [row] = await svc.db.database.sql<{ id: string; conversation_id: string }[]>`
    select id, conversation_id from chat_messages where content = ${content}`;
  if (!row) throw new Error(`no message ${content}`);
  return row;
}

/** A conversation of the first workspace, started by an inbound message. */
async function startConversation(): Promise<{ id: string; from: string }> {
  const from = peer();
  await delivered(text(from, `opening ${from}`));
  return { id: await conversationWith(from), from };
}

/**
 * Opens a subscription and waits, on the server's own count, until it is registered
 * (bounded at 10 s), so what the test delivers next is seen by it.
 */
async function subscribe(headers: Headers, query: string): Promise<SseStream> {
  const before = svc.service.events.size();
  const stream = await openStream(svc, headers, query);
  expect(stream.status).toBe(200);
  const bound = Date.now() + 10_000;
  while (svc.service.events.size() <= before) {
    if (Date.now() > bound) throw new Error('the subscription never registered');
    await new Promise((resolve) => setImmediate(resolve));
  }
  return stream;
}

async function close(...streams: SseStream[]): Promise<void> {
  for (const stream of streams) {
    stream.close();
    await stream.ended;
  }
}

async function nextEvent(stream: SseStream): Promise<ConversationEvent> {
  const frame = await stream.next();
  expect(frame.errors).toBeUndefined();
  return frame.data?.chatConversationEvent as ConversationEvent;
}

async function nextArrival(stream: SseStream): Promise<Arrival> {
  const frame = await stream.next();
  expect(frame.errors).toBeUndefined();
  return frame.data?.chatMessageReceived as Arrival;
}

/** Whether a frame arrives within `ms`; the stream is unusable for reading afterwards. */
async function frameWithin(stream: SseStream, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const quiet = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([stream.frame().then((frame) => frame !== null), quiet]);
  } finally {
    clearTimeout(timer);
  }
}

describe('chatMessageReceived(conversationId)', () => {
  test("streams an inbound message's id, content and sentAt", async () => {
    const { id, from } = await startConversation();
    const stream = await subscribe(await reader(), messageReceived(id));
    try {
      const sentAt = new Date('2025-03-04T05:06:07Z');
      await delivered(text(from, `second ${from}`, NUMBER, sentAt));
      const stored = await messageWith(`second ${from}`);
      const arrival = await nextArrival(stream);
      expect(arrival).toEqual({
        id: stored.id,
        conversationId: id,
        content: `second ${from}`,
        sentAt: expect.any(String),
        direction: 'in',
      });
      expect(new Date(arrival.sentAt).getTime()).toBe(sentAt.getTime());

      // A caption is the content of a file's message.
      await delivered(
        inboundMessage({
          phoneNumberId: NUMBER,
          from,
          profileName: 'Ada Lovelace',
          type: 'location',
          location: { latitude: 40.4, longitude: -3.7, name: 'Sol', address: 'Madrid' },
        }),
      );
      expect(await nextArrival(stream)).toMatchObject({
        conversationId: id,
        content: 'Sol, Madrid',
      });
    } finally {
      await close(stream);
    }
  });

  test('only that conversation: another thread, replies and statuses do not arrive', async () => {
    const mine = await startConversation();
    const other = await startConversation();
    const stream = await subscribe(await reader(), messageReceived(mine.id));
    try {
      await delivered(text(other.from, `elsewhere ${other.from}`));
      const { body } = await svc.graph(SEND, { conversationId: mine.id, text: 'a reply' });
      expect(dataOf<{ status: string }>(body, 'chatSendMessage').status).toBe('accepted');
      const wamid = chat.platform.sent.at(-1)!.messageId!;
      await delivered(
        statusUpdate({
          phoneNumberId: NUMBER,
          messageId: wamid,
          recipientId: mine.from,
          status: 'read',
        }),
      );
      const once = text(mine.from, `in mine ${mine.from}`);
      await delivered(once);
      expect(await nextArrival(stream)).toMatchObject({
        conversationId: mine.id,
        content: `in mine ${mine.from}`,
      });
      // A redelivery is stored once and streams nothing.
      await delivered(once);
      await delivered(text(mine.from, `then ${mine.from}`));
      expect(await nextArrival(stream)).toMatchObject({ content: `then ${mine.from}` });
    } finally {
      await close(stream);
    }
  });

  // The isolation guard (tests/support/isolation.ts) points here for this argument.
  test("'chatMessageReceived(conversationId)' with another workspace's conversation streams nothing", async () => {
    const theirs = await startConversation();
    const foreign = await subscribe(await headersOf(adminB), messageReceived(theirs.id));
    const own = await subscribe(await reader(), messageReceived(theirs.id));
    try {
      await delivered(text(theirs.from, `not for B ${theirs.from}`));
      expect(await nextArrival(own)).toMatchObject({ content: `not for B ${theirs.from}` });
      expect(await frameWithin(foreign, 300)).toBe(false);
    } finally {
      await close(foreign, own);
    }
  });
});

describe('chatConversationEvent', () => {
  test('names the conversation of an inbound message', async () => {
    const stream = await subscribe(await reader(), CONVERSATION_EVENT);
    try {
      const from = peer();
      await delivered(text(from, `new thread ${from}`));
      // The contact it creates is no chat event: the first frame is the message.
      const event = await nextEvent(stream);
      expect(event).toEqual({
        conversationId: await conversationWith(from),
        name: 'chat.message.received',
        at: expect.any(String),
      });
      expect(Number.isNaN(Date.parse(event.at))).toBe(false);
    } finally {
      await close(stream);
    }
  });

  test('names the conversation for each delivery status of a reply', async () => {
    const { id, from } = await startConversation();
    const stream = await subscribe(await reader(), CONVERSATION_EVENT);
    try {
      const { body } = await svc.graph(SEND, { conversationId: id, text: 'on its way' });
      const reply = dataOf<{ id: string; status: string }>(body, 'chatSendMessage');
      expect(reply.status).toBe('accepted');
      const sent = chat.platform.sent.at(-1)!;
      expect(sent.body.to).toBe(from);
      const status = (next: 'sent' | 'delivered' | 'read') =>
        statusUpdate({
          phoneNumberId: NUMBER,
          messageId: sent.messageId!,
          recipientId: from,
          status: next,
        });

      await delivered(status('delivered'));
      expect(await nextEvent(stream)).toMatchObject({
        conversationId: id,
        name: 'chat.message.status',
      });
      // A status that would move it backwards changes nothing and names nothing; read does.
      await delivered(status('sent'));
      await delivered(status('read'));
      expect(await nextEvent(stream)).toMatchObject({
        conversationId: id,
        name: 'chat.message.status',
      });
      const [row] = await svc.db.database.sql<{ status: string }[]>`
        select status from chat_messages where id = ${reply.id}`;
      expect(row?.status).toBe('read');

      // A failed reply (outside the 24-hour window) names it too.
      const again = await svc.graph(SEND, { conversationId: id, text: 'too late' });
      const late = dataOf<{ id: string }>(again.body, 'chatSendMessage');
      await delivered(
        statusUpdate({
          phoneNumberId: NUMBER,
          messageId: chat.platform.sent.at(-1)!.messageId!,
          recipientId: from,
          status: 'failed',
          errors: [windowClosedError()],
        }),
      );
      expect(await nextEvent(stream)).toMatchObject({
        conversationId: id,
        name: 'chat.message.status',
      });
      const [failed] = await svc.db.database.sql<{ status: string }[]>`
        select status from chat_messages where id = ${late.id}`;
      expect(failed?.status).toBe('failed');
    } finally {
      await close(stream);
    }
  });

  test('names the conversation once its media file is stored', async () => {
    const stream = await subscribe(await reader(), CONVERSATION_EVENT);
    try {
      const from = peer();
      const bytes = randomBytes(4096);
      const mediaId = chat.platform.addMedia({ bytes, mimeType: 'image/jpeg' });
      await delivered(
        inboundMessage({
          phoneNumberId: NUMBER,
          from,
          profileName: 'Ada Lovelace',
          type: 'image',
          image: { ...chat.platform.mediaPart(mediaId), caption: `photo ${from}` },
        }),
      );
      const conversationId = await conversationWith(from);
      expect(await nextEvent(stream)).toMatchObject({
        conversationId,
        name: 'chat.message.received',
      });
      expect(await nextEvent(stream)).toMatchObject({ conversationId, name: 'chat.media.settled' });
      const [row] = await svc.db.database.sql<{ media_state: string }[]>`
        select media_state from chat_messages where content = ${`photo ${from}`}`;
      expect(row?.media_state).toBe('stored');
      expect(chat.platform.mediaDownloads(mediaId)).toBe(1);
    } finally {
      await close(stream);
    }
  });

  test("another workspace's events never arrive", async () => {
    const streamB = await subscribe(await headersOf(adminB), CONVERSATION_EVENT);
    try {
      const fromA = peer();
      await delivered(text(fromA, `for A ${fromA}`));
      const a = await conversationWith(fromA);
      const { body } = await svc.graph(SEND, { conversationId: a, text: 'A replies' });
      expect(body.errors).toBeUndefined();
      await delivered(
        statusUpdate({
          phoneNumberId: NUMBER,
          messageId: chat.platform.sent.at(-1)!.messageId!,
          recipientId: fromA,
          status: 'delivered',
        }),
      );
      const fromB = peer();
      await delivered(text(fromB, `for B ${fromB}`, NUMBER_B));
      // B's first frame is its own thread: none of A's three changes came before it.
      expect(await nextEvent(streamB)).toEqual({
        conversationId: await conversationWith(fromB, workspaceB),
        name: 'chat.message.received',
        at: expect.any(String),
      });
    } finally {
      await close(streamB);
    }
  });
});

describe('access', () => {
  test.each([
    ['chatConversationEvent', CONVERSATION_EVENT],
    ['chatMessageReceived', messageReceived('00000000-0000-4000-8000-000000000000')],
  ])('%s refuses a token without chat:read', async (_field, query) => {
    const narrow = await reader(['contacts:read']);
    const stream = await openStream(svc, narrow, query);
    try {
      const frame = await stream.next();
      expect(frame.data ?? null).toBeNull();
      expect(frame.errors).toEqual([
        expect.objectContaining({
          extensions: expect.objectContaining({ code: 'UNAUTHORIZED', scope: 'chat:read' }),
        }),
      ]);
      expect(await stream.frame()).toEqual({ event: 'complete', data: '' });
    } finally {
      await close(stream);
    }
    // The same token's coreEvent stream runs (and will never carry chat events).
    const core = await subscribe(narrow, CORE_EVENT);
    await close(core);
    // chat:read is enough.
    const enough = await subscribe(await reader(['chat:read']), CONVERSATION_EVENT);
    await close(enough);
  });

  test('an anonymous subscription is refused', async () => {
    const stream = await openStream(svc, {}, CONVERSATION_EVENT);
    try {
      const frame = await stream.next();
      expect(frame.errors).toEqual([
        expect.objectContaining({
          extensions: expect.objectContaining({ code: 'UNAUTHENTICATED' }),
        }),
      ]);
    } finally {
      await close(stream);
    }
  });
});

describe('stream slots (SVC_STREAMS_PER_USER, default 5)', () => {
  test('each chat subscription takes one of the caller’s slots', async () => {
    const headers = await reader();
    const { id } = await startConversation();
    const streams: SseStream[] = [];
    try {
      for (const query of [
        CONVERSATION_EVENT,
        CONVERSATION_EVENT,
        CONVERSATION_EVENT,
        messageReceived(id),
        messageReceived(id),
      ]) {
        streams.push(await subscribe(headers, query));
      }
      for (const query of [CONVERSATION_EVENT, messageReceived(id), CORE_EVENT]) {
        const refused = await openStream(svc, headers, query);
        expect(refused.status).toBe(429);
        expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
        await refused.ended;
      }
      // Another caller's slots are its own.
      const other = await subscribe(await reader(), CONVERSATION_EVENT);
      await close(other);

      // Every open one still works.
      const from = (
        await svc.db.database.sql<{ peer: string }[]>`
        select peer from chat_conversations where id = ${id}`
      )[0]!.peer;
      await delivered(text(from, `to all ${from}`));
      for (const stream of streams.slice(0, 3)) {
        expect(await nextEvent(stream)).toMatchObject({ conversationId: id });
      }
      for (const stream of streams.slice(3)) {
        expect(await nextArrival(stream)).toMatchObject({ content: `to all ${from}` });
      }

      // Closing one frees its slot (once the server sees the connection go).
      await close(streams.pop()!);
      let again: SseStream | undefined;
      for (let attempt = 0; attempt < 200 && !again; attempt += 1) {
        const stream = await openStream(svc, headers, messageReceived(id));
        if (stream.status === 200) again = stream;
        else {
          await stream.ended;
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      expect(again).toBeDefined();
      streams.push(again!);
    } finally {
      await close(...streams);
    }
  });
});
