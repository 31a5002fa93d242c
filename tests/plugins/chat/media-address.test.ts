// A media lookup decides where the download goes: its `url` passes the outbound address
// rules (SPEC 8.2, docs/chat.md) like any plugin fetch. An internal address, or a redirect to
// one, is refused: the message's media ends `failed`, the address never sees the bearer and
// the media route serves nothing.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { wakeMediaWorker } from '../../../plugins/chat/media.js';
import { startChatPlatform, type ChatPlatform } from '../../support/chat-platform.js';
import { startTestService, type TestService } from '../../support/service.js';

const PHONE_NUMBER_ID = '1000';
const SECRET = 'internal secret: the metadata of this machine';

let platform: ChatPlatform;
let svc: TestService;
let secret: Server;
let secretPort: number;
/** The headers of each request the internal server got. */
const secretHits: IncomingHttpHeaders[] = [];
/** Allowed by SVC_OUTBOUND_ALLOWED_HOSTS; redirects every request to the internal server. */
let redirector: Server;
let redirectorPort: number;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  secret = createServer((req, res) => {
    secretHits.push(req.headers);
    res.writeHead(200, { 'content-type': 'text/plain' }).end(SECRET);
  });
  secretPort = await listen(secret);
  redirector = createServer((_req, res) => {
    res.writeHead(302, { location: `http://127.0.0.1:${secretPort}/secret` }).end();
  });
  redirectorPort = await listen(redirector);
  platform = await startChatPlatform();
  svc = await startTestService({
    plugins: {},
    env: {
      SVC_CHAT_GRAPH_URL: platform.graphUrl,
      SVC_CHAT_ACCESS_TOKEN: platform.accessToken,
      SVC_CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
      SVC_CHAT_CREDENTIALS_KEY: randomBytes(32).toString('hex'),
      SVC_OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${redirectorPort}`,
    },
  });
});

afterAll(async () => {
  await svc?.stop();
  await platform?.close();
  for (const server of [secret, redirector]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

interface Seeded {
  conversationId: string;
  messageId: string;
}

/** An inbound message carrying `mediaId`, stored as inbound stores it (pending, due now). */
async function seedMessage(mediaId: string): Promise<Seeded> {
  const sql = svc.db.database.sql;
  const workspaceId = svc.workspace.id;
  const [contact] = await sql<{ id: string }[]>`
    insert into contacts (workspace_id, name) values (${workspaceId}, 'Ada') returning id`;
  const [conversation] = await sql<{ id: string }[]>`
    insert into chat_conversations (workspace_id, contact_id, peer, phone_number_id, last_message_at)
    values (${workspaceId}, ${contact!.id}, ${`1555${randomBytes(4).readUInt32BE()}`},
      ${PHONE_NUMBER_ID}, now()) returning id`;
  const [message] = await sql<{ id: string }[]>`
    insert into chat_messages (workspace_id, conversation_id, direction, external_id, type,
      content, sent_at, media_id, media_mime_type, media_state, media_next_at)
    values (${workspaceId}, ${conversation!.id}, 'in', ${`wamid.${randomBytes(12).toString('hex')}`},
      'document', 'see attached', now(), ${mediaId}, 'text/plain', 'pending', now())
    returning id`;
  wakeMediaWorker();
  return { conversationId: conversation!.id, messageId: message!.id };
}

interface MediaRow {
  media_state: string;
  media_attempts: number;
  media_error: string | null;
}

/** Polls the row (every 50 ms, at most 20 s) until its media leaves `pending` with an attempt made. */
async function settledRow(messageId: string): Promise<MediaRow> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [row] = await svc.db.database.sql<MediaRow[]>`
      select media_state, media_attempts, media_error from chat_messages where id = ${messageId}`;
    if (row && (row.media_state !== 'pending' || row.media_error !== null)) return row;
    if (Date.now() > deadline) throw new Error(`media never settled: ${JSON.stringify(row)}`);
    wakeMediaWorker();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function served(seeded: Seeded): Promise<{ status: number; body: string }> {
  const response = await svc.request(
    `/api/plugins/chat/conversations/${seeded.conversationId}/messages/${seeded.messageId}/media`,
    { headers: svc.adminHeaders },
  );
  return { status: response.status, body: await response.text() };
}

test('a lookup answering an internal address ends the media failed; the route serves nothing', async () => {
  const url = `http://127.0.0.1:${secretPort}/secret?token=xyz`;
  const mediaId = platform.addMedia({ bytes: 'unused', mimeType: 'text/plain', url });
  const seeded = await seedMessage(mediaId);
  const row = await settledRow(seeded.messageId);
  expect(row).toMatchObject({
    media_state: 'failed',
    media_attempts: 1,
    media_error: `download refused: 127.0.0.1 is an internal address SVC_OUTBOUND_ALLOWED_HOSTS does not allow`,
  });
  expect(secretHits).toHaveLength(0);
  expect(await served(seeded)).toEqual({ status: 404, body: '{"error":"not found"}' });
});

test('a download redirected to an internal address is refused at the hop', async () => {
  const url = `http://127.0.0.1:${redirectorPort}/file`;
  const mediaId = platform.addMedia({ bytes: 'unused', mimeType: 'text/plain', url });
  const seeded = await seedMessage(mediaId);
  const row = await settledRow(seeded.messageId);
  expect(row).toMatchObject({ media_state: 'failed', media_attempts: 1 });
  expect(row.media_error).toBe(
    'download refused: 127.0.0.1 is an internal address SVC_OUTBOUND_ALLOWED_HOSTS does not allow',
  );
  expect(secretHits).toHaveLength(0);
  expect((await served(seeded)).status).toBe(404);
});

test('no error text or log line carries the URL or the bearer', () => {
  const text = JSON.stringify(svc.lines);
  expect(text).not.toContain(platform.accessToken);
  expect(text).not.toContain('/secret');
  expect(text).not.toContain('token=xyz');
});
