// The chat plugin across workspaces (SPEC 2.11, 4.3, 8.2 SVC_CHAT_CREDENTIALS_KEY and
// SVC_TENANT_MACHINE_GRACE): each workspace connected to its own number takes the inbound
// payloads of that number only, replies from it, and never sees another's conversations,
// messages or media. A deactivated workspace keeps taking deliveries through the grace.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { setWorkspaceDeactivated } from '../../../src/workspaces/service.js';
import { runSvc } from '../../support/cli.js';
import { batch, inboundMessage, statusUpdate } from '../../support/chat-platform.js';
import { dataOf, expectReason } from '../../support/contacts.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../../support/factories.js';
import type { GraphBody, TestService } from '../../support/service.js';
import { NUMBER, startChatHarness, type ChatHarness } from './support.js';

const KEY_HEX = randomBytes(32).toString('hex');
const NUMBER_A = '2000100010001000';
const NUMBER_B = '3000100010001000';

const CONNECT = `mutation ($phoneNumberId: String!, $accessToken: String!) {
  chatConnect(phoneNumberId: $phoneNumberId, accessToken: $accessToken)
}`;
const CONVERSATIONS = `query ($first: Int, $before: UUID) {
  chatConversations(first: $first, before: $before) {
    id contact { id name } lastMessage { id content }
  }
}`;
const CONVERSATION = `query ($id: UUID!) {
  chatConversation(id: $id) {
    id contact { id name }
    messages { id direction content status media { state downloadPath } }
  }
}`;
const SEND = `mutation ($conversationId: UUID!, $text: String!) {
  chatSendMessage(conversationId: $conversationId, text: $text) { id conversationId content status }
}`;

interface ConversationData {
  id: string;
  contact: { id: string; name: string };
  lastMessage: { id: string; content: string } | null;
}

interface MessageData {
  id: string;
  direction: string;
  content: string;
  status: string | null;
  media: { state: string; downloadPath: string | null } | null;
}

type Headers = Record<string, string>;

let chat: ChatHarness;
let svc: TestService;
let workspaceA: string;
let workspaceB: string;
let headersA: Headers;
let headersB: Headers;

beforeAll(async () => {
  chat = await startChatHarness({ env: { SVC_CHAT_CREDENTIALS_KEY: KEY_HEX } });
  svc = chat.svc;
  workspaceA = svc.workspace.id;
  headersA = svc.adminHeaders;
  const db = svc.db.database.db;
  const b = await createWorkspace(db);
  workspaceB = b.id;
  const adminB = await createUser(db, b, { role: 'admin' });
  headersB = bearer(await tokenFor(db, adminB, { catalogue: svc.service.access }));
  // The fake platform accepts one bearer: both workspaces connect with it.
  for (const [number, headers] of [
    [NUMBER_A, headersA],
    [NUMBER_B, headersB],
  ] as const) {
    const variables = { phoneNumberId: number, accessToken: chat.platform.accessToken };
    expect(
      dataOf<boolean>((await svc.graph(CONNECT, variables, headers)).body, 'chatConnect'),
    ).toBe(true);
  }
});

afterAll(() => chat?.stop());

/** A platform id nobody else in this file writes from. */
const peer = () => `4475${randomBytes(4).readUInt32BE()}`;

function text(phoneNumberId: string, from: string, body: string, profileName = 'Ada Lovelace') {
  return inboundMessage({ phoneNumberId, from, profileName, type: 'text', text: { body } });
}

async function delivered(payload: Parameters<ChatHarness['deliver']>[0]): Promise<void> {
  const answer = await chat.deliver(payload);
  expect(answer).toEqual({ status: 200, text: '' });
}

async function conversations(headers: Headers): Promise<ConversationData[]> {
  const { body } = await svc.graph(CONVERSATIONS, { first: 200 }, headers);
  return dataOf<ConversationData[]>(body, 'chatConversations');
}

async function messages(headers: Headers, id: string): Promise<MessageData[]> {
  const { body } = await svc.graph(CONVERSATION, { id }, headers);
  return dataOf<{ messages: MessageData[] }>(body, 'chatConversation').messages;
}

/** The conversation of `workspaceId` with `from`, by SQL (any workspace). */
async function conversationWith(workspaceId: string, from: string): Promise<string | undefined> {
  const [row] = await svc.db.database.sql<{ id: string }[]>`
    select id from chat_conversations where workspace_id = ${workspaceId} and peer = ${from}`;
  return row?.id;
}

/** Every stored message whose content is `content`, with its workspace, in any workspace. */
async function storedWith(content: string): Promise<{ workspace_id: string }[]> {
  return svc.db.database.sql<{ workspace_id: string }[]>`
    select workspace_id from chat_messages where content = ${content}`;
}

async function counts(): Promise<{ messages: number; conversations: number; events: number }> {
  const [row] = await svc.db.database.sql<
    { messages: number; conversations: number; events: number }[]
  >`select (select count(*)::int from chat_messages) as messages,
      (select count(*)::int from chat_conversations) as conversations,
      (select count(*)::int from events where name like 'chat.%') as events`;
  return row!;
}

/** A conversation of `headers`' workspace on `number`, started by an inbound message. */
async function started(
  number: string,
  headers: Headers,
  body = 'hello',
): Promise<{
  id: string;
  from: string;
}> {
  const from = peer();
  await delivered(text(number, from, body));
  const found = (await conversations(headers)).find(
    (conversation) => conversation.lastMessage?.content === body,
  );
  if (!found) throw new Error(`no conversation for ${body}`);
  return { id: found.id, from };
}

describe('inbound payloads are routed by their number', () => {
  test("a payload for A's number lands in A only", async () => {
    const from = peer();
    const body = `for A ${from}`;
    await delivered(text(NUMBER_A, from, body, 'Grace Hopper'));
    expect(await storedWith(body)).toEqual([{ workspace_id: workspaceA }]);
    const inA = (await conversations(headersA)).filter((c) => c.lastMessage?.content === body);
    expect(inA).toHaveLength(1);
    expect(inA[0]!.contact.name).toBe('Grace Hopper');
    expect((await conversations(headersB)).some((c) => c.lastMessage?.content === body)).toBe(
      false,
    );
    // The contact it made is A's.
    const [contact] = await svc.db.database.sql<{ workspace_id: string }[]>`
      select workspace_id from contacts where id = ${inA[0]!.contact.id}`;
    expect(contact?.workspace_id).toBe(workspaceA);
  });

  test('a batch carrying both numbers lands each change in its own workspace', async () => {
    const fromA = peer();
    const fromB = peer();
    const bodyA = `batched A ${fromA}`;
    const bodyB = `batched B ${fromB}`;
    await delivered(batch(text(NUMBER_A, fromA, bodyA), text(NUMBER_B, fromB, bodyB)));
    expect(await storedWith(bodyA)).toEqual([{ workspace_id: workspaceA }]);
    expect(await storedWith(bodyB)).toEqual([{ workspace_id: workspaceB }]);
    const listedA = (await conversations(headersA)).map((c) => c.lastMessage?.content);
    const listedB = (await conversations(headersB)).map((c) => c.lastMessage?.content);
    expect(listedA).toContain(bodyA);
    expect(listedA).not.toContain(bodyB);
    expect(listedB).toContain(bodyB);
    expect(listedB).not.toContain(bodyA);
  });

  test('one sender writing to both numbers is two contacts and two conversations', async () => {
    const from = peer();
    await delivered(
      batch(text(NUMBER_A, from, `to A ${from}`), text(NUMBER_B, from, `to B ${from}`)),
    );
    const inA = await conversationWith(workspaceA, from);
    const inB = await conversationWith(workspaceB, from);
    expect(inA).toBeDefined();
    expect(inB).toBeDefined();
    expect(inA).not.toBe(inB);
    const [contactA] = await svc.db.database.sql<{ contact_id: string }[]>`
      select contact_id from chat_conversations where id = ${inA!}`;
    const [contactB] = await svc.db.database.sql<{ contact_id: string }[]>`
      select contact_id from chat_conversations where id = ${inB!}`;
    expect(contactA!.contact_id).not.toBe(contactB!.contact_id);
    expect((await messages(headersA, inA!)).map((m) => m.content)).toEqual([`to A ${from}`]);
    expect((await messages(headersB, inB!)).map((m) => m.content)).toEqual([`to B ${from}`]);
  });

  test('a payload for a number nobody holds is answered 200 and stored nowhere', async () => {
    const before = await counts();
    const body = `lost ${peer()}`;
    // With two workspaces, the environment's number serves none of them either.
    for (const number of ['9999000099990000', NUMBER]) {
      await delivered(text(number, peer(), body));
    }
    expect(await storedWith(body)).toEqual([]);
    expect(await counts()).toEqual(before);
  });

  test('a payload not routed logs why, naming the number and what to do', async () => {
    const from = svc.lines.length;
    await delivered(text(NUMBER, peer(), `unrouted ${peer()}`));
    await delivered(text('9999000099990000', peer(), `unrouted ${peer()}`));
    const warned = svc.lines.slice(from).filter((line) => line.level === 'warn');
    expect(warned).toEqual([
      expect.objectContaining({
        dropped: 1,
        unrouted: { [NUMBER]: expect.stringContaining('this one has several') },
        msg: expect.stringContaining('connect the number to one of them (chatConnect)'),
      }),
      expect.objectContaining({
        unrouted: {
          '9999000099990000': expect.stringContaining(
            'no workspace connected this number and it is not SVC_CHAT_PHONE_NUMBER_ID',
          ),
        },
      }),
    ]);
  });
});

describe('replies', () => {
  test("each workspace replies from its own number, to its conversation's contact", async () => {
    const a = await started(NUMBER_A, headersA, `reply A ${peer()}`);
    const b = await started(NUMBER_B, headersB, `reply B ${peer()}`);
    for (const [conversation, headers, number] of [
      [a, headersA, NUMBER_A],
      [b, headersB, NUMBER_B],
    ] as const) {
      const before = chat.platform.sent.length;
      const { body } = await svc.graph(
        SEND,
        { conversationId: conversation.id, text: `from ${number}` },
        headers,
      );
      const reply = dataOf<{ id: string; status: string }>(body, 'chatSendMessage');
      expect(reply.status).toBe('accepted');
      expect(chat.platform.sent).toHaveLength(before + 1);
      expect(chat.platform.sent.at(-1)).toMatchObject({
        phoneNumberId: number,
        status: 200,
        authorization: `Bearer ${chat.platform.accessToken}`,
        body: { to: conversation.from, text: { body: `from ${number}` } },
      });
    }
  });

  test("a status for A's reply arriving on B's number does not move it", async () => {
    const a = await started(NUMBER_A, headersA, `status A ${peer()}`);
    const { body } = await svc.graph(SEND, { conversationId: a.id, text: 'tick?' }, headersA);
    const reply = dataOf<{ id: string }>(body, 'chatSendMessage');
    const wamid = chat.platform.sent.at(-1)!.messageId!;
    const status = (phoneNumberId: string) =>
      statusUpdate({ phoneNumberId, messageId: wamid, recipientId: a.from, status: 'delivered' });
    await delivered(status(NUMBER_B));
    const replyOf = async () => (await messages(headersA, a.id)).find((m) => m.id === reply.id);
    expect((await replyOf())?.status).toBe('accepted');
    await delivered(status(NUMBER_A));
    expect((await replyOf())?.status).toBe('delivered');
  });
});

describe("another workspace's conversations", () => {
  let a: { id: string; from: string };
  beforeAll(async () => {
    a = await started(NUMBER_A, headersA, `private ${peer()}`);
  });

  /** A refusal with its path and everything but the id it names. */
  const refusal = (body: GraphBody) => ({ data: body.data ?? null, errors: body.errors });

  test("B's chatConversation(A's id) answers conversation_not_found exactly like a made-up id", async () => {
    const foreign = await svc.graph(CONVERSATION, { id: a.id }, headersB);
    const madeUp = await svc.graph(
      CONVERSATION,
      { id: '00000000-0000-4000-8000-000000000001' },
      headersB,
    );
    expectReason(foreign.body, 'NOT_FOUND', 'conversation_not_found');
    expect(foreign.status).toBe(madeUp.status);
    expect(refusal(foreign.body)).toEqual(refusal(madeUp.body));
    // A reads it.
    expect((await messages(headersA, a.id)).length).toBeGreaterThan(0);
  });

  test("B's chatSendMessage on A's conversation is conversation_not_found and sends nothing", async () => {
    const before = chat.platform.sent.length;
    const foreign = await svc.graph(SEND, { conversationId: a.id, text: 'sneaky' }, headersB);
    expectReason(foreign.body, 'NOT_FOUND', 'conversation_not_found');
    const madeUp = await svc.graph(
      SEND,
      { conversationId: '00000000-0000-4000-8000-000000000002', text: 'sneaky' },
      headersB,
    );
    expect(refusal(foreign.body)).toEqual(refusal(madeUp.body));
    expect(chat.platform.sent).toHaveLength(before);
    expect(await storedWith('sneaky')).toEqual([]);
  });

  test("B's chatConversations never lists A's, and A's id is no cursor for B", async () => {
    const listedB = await conversations(headersB);
    expect(listedB.map((c) => c.id)).not.toContain(a.id);
    const [{ count } = { count: -1 }] = await svc.db.database.sql<{ count: number }[]>`
      select count(*)::int as count from chat_conversations where workspace_id = ${workspaceB}`;
    expect(listedB).toHaveLength(count);
    const ofA = await svc.db.database.sql<{ id: string }[]>`
      select id from chat_conversations where workspace_id = ${workspaceA}`;
    for (const { id } of ofA) expect(listedB.map((c) => c.id)).not.toContain(id);
    const paged = await svc.graph(CONVERSATIONS, { first: 5, before: a.id }, headersB);
    expectReason(paged.body, 'NOT_FOUND', 'conversation_not_found');
  });

  test("the media route answers 404 for A's ids to B's caller", async () => {
    const bytes = randomBytes(2048);
    const mediaId = chat.platform.addMedia({ bytes, mimeType: 'image/png' });
    const from = peer();
    await delivered(
      inboundMessage({
        phoneNumberId: NUMBER_A,
        from,
        profileName: 'Ada',
        type: 'image',
        image: { ...chat.platform.mediaPart(mediaId), caption: `picture ${from}` },
      }),
    );
    const conversationId = (await conversationWith(workspaceA, from))!;
    let path: string | null = null;
    const deadline = Date.now() + 20_000;
    while (!path) {
      const [image] = await messages(headersA, conversationId);
      path = image?.media?.state === 'stored' ? image.media.downloadPath : null;
      if (Date.now() > deadline) throw new Error(`media never stored: ${JSON.stringify(image)}`);
      if (!path) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const own = await svc.request(`${path}`, { headers: headersA });
    expect(own.status).toBe(200);
    expect(Buffer.from(await own.arrayBuffer()).equals(bytes)).toBe(true);
    const foreign = await svc.request(`${path}`, { headers: headersB });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ error: 'not found' });
    expect(foreign.headers.get('etag')).toBeNull();
  });
});

describe('a deactivated workspace (SVC_TENANT_MACHINE_GRACE)', () => {
  test('with the default grace its number is still taken in', async () => {
    await setWorkspaceDeactivated(svc.db.database.db, workspaceB, new Date());
    try {
      const from = peer();
      const body = `while deactivated ${from}`;
      await delivered(text(NUMBER_B, from, body));
      expect(await storedWith(body)).toEqual([{ workspace_id: workspaceB }]);
      // Past the grace it is not.
      const graceAgo = new Date(Date.now() - 336 * 3_600_000 - 1000);
      await setWorkspaceDeactivated(svc.db.database.db, workspaceB, graceAgo);
      const late = `past the grace ${from}`;
      await delivered(text(NUMBER_B, from, late));
      expect(await storedWith(late)).toEqual([]);
    } finally {
      await setWorkspaceDeactivated(svc.db.database.db, workspaceB, null);
    }
    const again = `reactivated ${peer()}`;
    await delivered(text(NUMBER_B, peer(), again));
    expect(await storedWith(again)).toEqual([{ workspace_id: workspaceB }]);
  });

  test('with 0s, once `svc workspace:deactivate` runs, an inbound message is answered 200 and not stored', async () => {
    const zero = await startChatHarness({ env: { SVC_TENANT_MACHINE_GRACE: '0s' } });
    try {
      const sql = zero.svc.db.database.sql;
      const stored = async () =>
        (await sql<{ content: string }[]>`select content from chat_messages order by content`).map(
          (row) => row.content,
        );
      // The environment's number serves the one workspace.
      expect((await zero.deliver(text(NUMBER, peer(), 'active'))).status).toBe(200);
      expect(await stored()).toEqual(['active']);

      const command = await runSvc(
        ['workspace:deactivate', '-workspace', zero.svc.workspace.id, '-as', 'ops'],
        { SVC_DATABASE_URL: zero.svc.db.url },
      );
      expect(command.stderr).toBe('');
      expect(command.code).toBe(0);
      const refused = await zero.deliver(text(NUMBER, peer(), 'deactivated'));
      expect(refused).toEqual({ status: 200, text: '' });
      expect(await stored()).toEqual(['active']);
      const [{ count } = { count: -1 }] = await sql<{ count: number }[]>`
        select count(*)::int as count from events where name = 'chat.message.received'`;
      expect(count).toBe(1);

      const back = await runSvc(
        ['workspace:reactivate', '-workspace', zero.svc.workspace.id, '-as', 'ops'],
        { SVC_DATABASE_URL: zero.svc.db.url },
      );
      expect(back.code).toBe(0);
      expect((await zero.deliver(text(NUMBER, peer(), 'reactivated'))).status).toBe(200);
      expect(await stored()).toEqual(['active', 'reactivated']);
    } finally {
      await zero.stop();
    }
  });
});
