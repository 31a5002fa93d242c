// The chat plugin's settings (SPEC 8.2 "Chat plugin", 4.3, 5 "Chat webhook authentication"):
// a workspace's access token sealed under SVC_CHAT_CREDENTIALS_KEY (AES-256-GCM), the
// connection's mutations, `svc check` on the key, and the plugin inert without its settings.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { seal, unseal } from '../../../plugins/chat/settings.js';
import { runSvc } from '../../support/cli.js';
import {
  inboundMessage,
  postWebhook,
  verifyWebhook,
  type ChatPlatform,
  startChatPlatform,
} from '../../support/chat-platform.js';
import { dataOf, expectReason, freshWorkspaceHeaders } from '../../support/contacts.js';
import { bearer, createUser, tokenFor } from '../../support/factories.js';
import { startTestService, type TestService } from '../../support/service.js';
import { APP_SECRET, NUMBER, startChatHarness, type ChatHarness } from './support.js';

const KEY_HEX = randomBytes(32).toString('hex');
const KEY = Buffer.from(KEY_HEX, 'hex');

const CONNECT = `mutation ($phoneNumberId: String!, $accessToken: String!) {
  chatConnect(phoneNumberId: $phoneNumberId, accessToken: $accessToken)
}`;
const DISCONNECT = 'mutation { chatDisconnect }';
const SEND = `mutation ($conversationId: UUID!, $text: String!) {
  chatSendMessage(conversationId: $conversationId, text: $text) { id content status }
}`;

/** A unique platform number id, so tests never share one. */
const numberId = () => `5${randomBytes(6).readUIntBE(0, 6)}`;
const peerId = () => `3467${randomBytes(3).readUIntBE(0, 3)}`;

interface ConnectionRow {
  phone_number_id: string;
  access_token_sealed: Buffer;
}

async function connectionOf(svc: TestService, workspaceId: string): Promise<ConnectionRow[]> {
  return svc.db.database.sql<ConnectionRow[]>`
    select phone_number_id, access_token_sealed from chat_connections
    where workspace_id = ${workspaceId}`;
}

async function messagesIn(svc: TestService, workspaceId: string): Promise<number> {
  const [row] = await svc.db.database.sql<{ count: number }[]>`
    select count(*)::int as count from chat_messages where workspace_id = ${workspaceId}`;
  return row?.count ?? -1;
}

/** A contact, a conversation with `peer` on `phoneNumberId` and one inbound message, in SQL. */
async function seedConversation(
  svc: TestService,
  workspaceId: string,
  phoneNumberId: string,
): Promise<string> {
  const sql = svc.db.database.sql;
  const [contact] = await sql<{ id: string }[]>`
    insert into contacts (workspace_id, name) values (${workspaceId}, 'Seeded') returning id`;
  const [conversation] = await sql<{ id: string }[]>`
    insert into chat_conversations (workspace_id, contact_id, peer, phone_number_id,
      last_message_at, last_inbound_at)
    values (${workspaceId}, ${contact!.id}, ${peerId()}, ${phoneNumberId}, now(), now())
    returning id`;
  return conversation!.id;
}

describe('seal and unseal (AES-256-GCM)', () => {
  test('a sealed token opens with its key, and two seals of one token differ', () => {
    const first = seal(KEY, 'EAAG-secret-token');
    const second = seal(KEY, 'EAAG-secret-token');
    expect(first.equals(second)).toBe(false);
    // A fresh 12-byte nonce each time, and the 16-byte tag after the ciphertext.
    expect(first.subarray(0, 12).equals(second.subarray(0, 12))).toBe(false);
    expect(first.length).toBe(12 + Buffer.byteLength('EAAG-secret-token') + 16);
    expect(first.includes(Buffer.from('EAAG-secret-token'))).toBe(false);
    expect(unseal(KEY, first)).toBe('EAAG-secret-token');
    expect(unseal(KEY, second)).toBe('EAAG-secret-token');
    expect(unseal(KEY, seal(KEY, ''))).toBe('');
    expect(unseal(KEY, seal(KEY, 'ñandú ✓'))).toBe('ñandú ✓');
  });

  test('the wrong key, tampered bytes or a truncated value open to null', () => {
    const sealed = seal(KEY, 'EAAG-secret-token');
    expect(unseal(randomBytes(32), sealed)).toBeNull();
    for (const at of [0, 12, sealed.length - 1]) {
      const tampered = Buffer.from(sealed);
      tampered[at] = tampered[at]! ^ 0x01;
      expect(unseal(KEY, tampered)).toBeNull();
    }
    expect(unseal(KEY, sealed.subarray(0, sealed.length - 1))).toBeNull();
    expect(unseal(KEY, sealed.subarray(0, 27))).toBeNull();
    expect(unseal(KEY, Buffer.alloc(0))).toBeNull();
  });
});

describe('chatConnect without SVC_CHAT_CREDENTIALS_KEY', () => {
  let chat: ChatHarness;
  beforeAll(async () => {
    chat = await startChatHarness();
  });
  afterAll(() => chat?.stop());

  test('is refused chat_credentials_key_unset and stores nothing', async () => {
    const { body } = await chat.svc.graph(CONNECT, {
      phoneNumberId: numberId(),
      accessToken: chat.platform.accessToken,
    });
    expectReason(body, 'CONFLICT', 'chat_credentials_key_unset');
    expect(await connectionOf(chat.svc, chat.svc.workspace.id)).toEqual([]);
    // Nothing to forget either.
    expect(dataOf<boolean>((await chat.svc.graph(DISCONNECT)).body, 'chatDisconnect')).toBe(false);
  });
});

describe('chatConnect and chatDisconnect with SVC_CHAT_CREDENTIALS_KEY', () => {
  let chat: ChatHarness;
  beforeAll(async () => {
    chat = await startChatHarness({ env: { SVC_CHAT_CREDENTIALS_KEY: KEY_HEX } });
  });
  afterAll(() => chat?.stop());

  test('stores the token sealed under the key: the row never holds its text', async () => {
    const { svc } = chat;
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const number = numberId();
    const accessToken = `EAAG${randomBytes(24).toString('hex')}`;
    const { body } = await svc.graph(CONNECT, { phoneNumberId: number, accessToken }, headers);
    expect(dataOf<boolean>(body, 'chatConnect')).toBe(true);
    const rows = await connectionOf(svc, workspaceId);
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row!.phone_number_id).toBe(number);
    const bytes = row!.access_token_sealed;
    expect(bytes.includes(Buffer.from(accessToken))).toBe(false);
    expect(bytes.toString('latin1')).not.toContain(accessToken);
    expect(bytes.toString('hex')).not.toContain(Buffer.from(accessToken).toString('hex'));
    expect(unseal(KEY, bytes)).toBe(accessToken);
    expect(unseal(randomBytes(32), bytes)).toBeNull();

    // Connecting again replaces the connection (another number, a fresh seal).
    const again = numberId();
    const replaced = await svc.graph(CONNECT, { phoneNumberId: again, accessToken }, headers);
    expect(dataOf<boolean>(replaced.body, 'chatConnect')).toBe(true);
    const [now] = await connectionOf(svc, workspaceId);
    expect(now!.phone_number_id).toBe(again);
    expect(now!.access_token_sealed.equals(bytes)).toBe(false);
    expect(unseal(KEY, now!.access_token_sealed)).toBe(accessToken);
    expect(await connectionOf(svc, workspaceId)).toHaveLength(1);
  });

  test('a number id that is not digits, or a blank token, is refused before anything is stored', async () => {
    const { svc } = chat;
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    for (const phoneNumberId of ['', '../../x?y=', '1000 2000', 'abc']) {
      const { body } = await svc.graph(CONNECT, { phoneNumberId, accessToken: 't' }, headers);
      expectReason(body, 'VALIDATION', 'chat_number_invalid');
    }
    const { body } = await svc.graph(
      CONNECT,
      { phoneNumberId: numberId(), accessToken: '  ' },
      headers,
    );
    expectReason(body, 'VALIDATION', 'chat_token_required');
    expect(await connectionOf(svc, workspaceId)).toHaveLength(0);
  });

  test('after a reconnect to another number, a thread of the old number is not replied to', async () => {
    const { svc, platform } = chat;
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const old = numberId();
    const variables = { phoneNumberId: old, accessToken: platform.accessToken };
    dataOf((await svc.graph(CONNECT, variables, headers)).body, 'chatConnect');
    const conversationId = await seedConversation(svc, workspaceId, old);
    dataOf(
      (await svc.graph(CONNECT, { ...variables, phoneNumberId: numberId() }, headers)).body,
      'chatConnect',
    );
    const sentBefore = platform.sent.length;
    const { body } = await svc.graph(SEND, { conversationId, text: 'still there?' }, headers);
    expectReason(body, 'CONFLICT', 'chat_not_connected');
    expect(platform.sent).toHaveLength(sentBefore);
  });

  test('a number another workspace holds is refused chat_number_taken', async () => {
    const { svc } = chat;
    const first = await freshWorkspaceHeaders(svc);
    const second = await freshWorkspaceHeaders(svc);
    const number = numberId();
    const variables = { phoneNumberId: number, accessToken: 'token-one' };
    expect(
      dataOf<boolean>((await svc.graph(CONNECT, variables, first.headers)).body, 'chatConnect'),
    ).toBe(true);
    const taken = await svc.graph(
      CONNECT,
      { phoneNumberId: number, accessToken: 'token-two' },
      second.headers,
    );
    expectReason(taken.body, 'CONFLICT', 'chat_number_taken');
    expect(await connectionOf(svc, second.workspaceId)).toEqual([]);
    const [held] = await connectionOf(svc, first.workspaceId);
    expect(unseal(KEY, held!.access_token_sealed)).toBe('token-one');
    // The holder may connect its own number again.
    const own = await svc.graph(
      CONNECT,
      { phoneNumberId: number, accessToken: 'token-three' },
      first.headers,
    );
    expect(dataOf<boolean>(own.body, 'chatConnect')).toBe(true);
    // Once the holder lets it go, the number is free.
    expect(
      dataOf<boolean>((await svc.graph(DISCONNECT, {}, first.headers)).body, 'chatDisconnect'),
    ).toBe(true);
    const freed = await svc.graph(
      CONNECT,
      { phoneNumberId: number, accessToken: 'token-two' },
      second.headers,
    );
    expect(dataOf<boolean>(freed.body, 'chatConnect')).toBe(true);
  });

  // KNOWN BUG (plugins/chat/settings.ts connectWorkspace): the "taken" check runs before the
  // insert, outside any lock, so the loser of a race hits chat_connections_number_key and
  // answers INTERNAL. Marked failing until fixed; then make it a plain `test`.
  test('two workspaces racing for one number: one connects, the other is chat_number_taken', async () => {
    const { svc } = chat;
    for (let round = 0; round < 5; round += 1) {
      const racers = [await freshWorkspaceHeaders(svc), await freshWorkspaceHeaders(svc)];
      const number = numberId();
      const answers = await Promise.all(
        racers.map(({ headers }) =>
          svc.graph(CONNECT, { phoneNumberId: number, accessToken: 'racing' }, headers),
        ),
      );
      const reasons = answers
        .map(({ body }) => body.errors?.[0]?.extensions.reason ?? body.data?.chatConnect)
        .sort();
      expect(reasons).toEqual(['chat_number_taken', true].sort());
    }
  });

  test('chatDisconnect forgets the connection: its number is no longer taken in', async () => {
    const { svc } = chat;
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const number = numberId();
    const connect = { phoneNumberId: number, accessToken: chat.platform.accessToken };
    expect(dataOf<boolean>((await svc.graph(CONNECT, connect, headers)).body, 'chatConnect')).toBe(
      true,
    );
    const inbound = () =>
      chat.deliver(
        inboundMessage({
          phoneNumberId: number,
          from: peerId(),
          profileName: 'Ada',
          type: 'text',
          text: { body: 'hello' },
        }),
      );
    expect((await inbound()).status).toBe(200);
    expect(await messagesIn(svc, workspaceId)).toBe(1);

    expect(dataOf<boolean>((await svc.graph(DISCONNECT, {}, headers)).body, 'chatDisconnect')).toBe(
      true,
    );
    expect(await connectionOf(svc, workspaceId)).toEqual([]);
    expect(dataOf<boolean>((await svc.graph(DISCONNECT, {}, headers)).body, 'chatDisconnect')).toBe(
      false,
    );
    // Answered (the platform must not retry) but stored nowhere.
    expect((await inbound()).status).toBe(200);
    expect(await messagesIn(svc, workspaceId)).toBe(1);
    // And no reply goes out: the workspace has no line.
    const [conversation] = await svc.db.database.sql<{ id: string }[]>`
      select id from chat_conversations where workspace_id = ${workspaceId}`;
    const sent = chat.platform.sent.length;
    const reply = await svc.graph(SEND, { conversationId: conversation!.id, text: 'hi' }, headers);
    expectReason(reply.body, 'CONFLICT', 'chat_not_connected');
    expect(chat.platform.sent).toHaveLength(sent);
  });

  test('a token sealed under another key does not open: the workspace is not connected', async () => {
    const { svc } = chat;
    const { workspaceId, headers } = await freshWorkspaceHeaders(svc);
    const number = numberId();
    const connect = { phoneNumberId: number, accessToken: chat.platform.accessToken };
    expect(dataOf<boolean>((await svc.graph(CONNECT, connect, headers)).body, 'chatConnect')).toBe(
      true,
    );
    const conversationId = await seedConversation(svc, workspaceId, number);
    // A second process on the same database, its key rotated.
    const rotated = await startTestService({
      db: svc.db,
      plugins: {},
      env: {
        SVC_CHAT_GRAPH_URL: chat.platform.graphUrl,
        SVC_CHAT_CREDENTIALS_KEY: randomBytes(32).toString('hex'),
      },
    });
    try {
      const sent = chat.platform.sent.length;
      const reply = await rotated.graph(SEND, { conversationId, text: 'hi' }, headers);
      expectReason(reply.body, 'CONFLICT', 'chat_not_connected');
      expect(chat.platform.sent).toHaveLength(sent);
    } finally {
      await rotated.service.shutdown();
    }
    // Under its own key it sends from the connected number.
    const reply = await svc.graph(SEND, { conversationId, text: 'hi' }, headers);
    expect(dataOf<{ status: string }>(reply.body, 'chatSendMessage').status).toBe('accepted');
    expect(chat.platform.sent.at(-1)).toMatchObject({
      phoneNumberId: number,
      authorization: `Bearer ${chat.platform.accessToken}`,
      status: 200,
    });
  });

  test('connecting needs manage_chat and chat:write', async () => {
    const { svc } = chat;
    const db = svc.db.database.db;
    const member = await createUser(db, svc.workspace, { role: 'member' });
    const memberHeaders = bearer(await tokenFor(db, member, { catalogue: svc.service.access }));
    const variables = { phoneNumberId: numberId(), accessToken: 'x' };
    const refused = await svc.graph(CONNECT, variables, memberHeaders);
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({
      code: 'UNAUTHORIZED',
      capability: 'manage_chat',
    });
    const reader = bearer(
      await tokenFor(db, svc.admin, { scopes: ['chat:read'], catalogue: svc.service.access }),
    );
    const narrow = await svc.graph(DISCONNECT, {}, reader);
    expect(narrow.body.errors?.[0]?.extensions).toMatchObject({
      code: 'UNAUTHORIZED',
      scope: 'chat:write',
    });
    expect(await connectionOf(svc, svc.workspace.id)).toEqual([]);
  });
});

describe('svc check and SVC_CHAT_CREDENTIALS_KEY', () => {
  const base = { SVC_DATABASE_URL: 'postgres://u:p@127.0.0.1:1/none' };

  test('a key of 64 hex characters is valid', async () => {
    const result = await runSvc(['check'], { ...base, SVC_CHAT_CREDENTIALS_KEY: KEY_HEX });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('configuration is valid');
  });

  test.each([
    ['not hex', 'z'.repeat(64)],
    ['too short', KEY_HEX.slice(0, 62)],
    ['too long', `${KEY_HEX}00`],
    ['base64 of 32 bytes', randomBytes(32).toString('base64')],
  ])('a key %s is named and refused', async (_what, value) => {
    const result = await runSvc(['check'], { ...base, SVC_CHAT_CREDENTIALS_KEY: value });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_CHAT_CREDENTIALS_KEY');
    expect(result.stderr).not.toContain(value);
    expect(result.stderr).not.toMatch(/ECONNREFUSED|connect/);
  });
});

describe('the plugin without its settings is inert', () => {
  let platform: ChatPlatform;
  let svc: TestService;
  beforeAll(async () => {
    platform = await startChatPlatform();
    // Only the platform's address: no app secret, verify token, access token or number.
    svc = await startTestService({ plugins: {}, env: { SVC_CHAT_GRAPH_URL: platform.graphUrl } });
  });
  afterAll(async () => {
    await svc?.stop();
    await platform?.close();
  });

  const webhookUrl = () => `${svc.origin}/api/plugins/chat/webhook`;
  const via = (url: string, init?: RequestInit) => svc.request(url, init);
  const payload = () =>
    inboundMessage({
      phoneNumberId: NUMBER,
      from: peerId(),
      profileName: 'Ada',
      type: 'text',
      text: { body: 'anyone there?' },
    });

  test('without SVC_CHAT_APP_SECRET every POST is 403, however it is signed', async () => {
    for (const appSecret of [APP_SECRET, '', 'x']) {
      const answer = await postWebhook(webhookUrl(), payload(), { appSecret, via });
      expect(answer).toEqual({ status: 403, text: '' });
    }
    // Signed with the empty secret by hand, and not signed at all.
    const unsigned = await postWebhook(webhookUrl(), payload(), {
      appSecret: APP_SECRET,
      via,
      signature: null,
    });
    expect(unsigned.status).toBe(403);
    const garbage = await postWebhook(webhookUrl(), 'not even json', { appSecret: '', via });
    expect(garbage.status).toBe(403);
    expect(await messagesIn(svc, svc.workspace.id)).toBe(0);
  });

  test('without SVC_CHAT_VERIFY_TOKEN the GET handshake is 403', async () => {
    for (const verifyToken of ['chat-verify-token', '', 'undefined', 'null']) {
      const answer = await verifyWebhook(webhookUrl(), {
        verifyToken,
        challenge: '1158201444',
        via,
      });
      expect(answer.status).toBe(403);
      expect(answer.text).not.toContain('1158201444');
    }
    const bare = await svc.request(`${webhookUrl()}?hub.mode=subscribe&hub.challenge=42`);
    expect(bare.status).toBe(403);
  });

  test('without an access token and number, chatSendMessage is refused chat_not_connected', async () => {
    const conversationId = await seedConversation(svc, svc.workspace.id, NUMBER);
    const { body } = await svc.graph(SEND, { conversationId, text: 'hello?' });
    expectReason(body, 'CONFLICT', 'chat_not_connected');
    expect(platform.sent).toEqual([]);
    const [row] = await svc.db.database.sql<{ count: number }[]>`
      select count(*)::int as count from chat_messages where conversation_id = ${conversationId}`;
    expect(row?.count).toBe(0);
  });

  test('with only the number or only the token it is still not connected', async () => {
    for (const env of [
      { SVC_CHAT_PHONE_NUMBER_ID: NUMBER },
      { SVC_CHAT_ACCESS_TOKEN: platform.accessToken },
    ]) {
      const half = await startTestService({
        plugins: {},
        env: { SVC_CHAT_GRAPH_URL: platform.graphUrl, ...env },
      });
      try {
        const conversationId = await seedConversation(half, half.workspace.id, NUMBER);
        const { body } = await half.graph(SEND, { conversationId, text: 'hello?' });
        expectReason(body, 'CONFLICT', 'chat_not_connected');
      } finally {
        await half.stop();
      }
    }
    expect(platform.sent).toEqual([]);
  });
});
