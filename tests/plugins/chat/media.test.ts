// Chat media (SPEC 3 "Chat media", 4.3 "GET media", 5, 8.1): inbound attachments downloaded
// from the platform by durable background work and served back from PostgreSQL. The
// platform is the fake of tests/support/chat-platform.ts over real HTTP; messages are seeded
// with SQL as the inbound code stores them (media_state 'pending', due now).
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Config } from '../../../src/config.js';
import { wakeMediaWorker } from '../../../plugins/chat/media.js';
import { connectWorkspace } from '../../../plugins/chat/settings.js';
import { startChatPlatform, type ChatPlatform } from '../../support/chat-platform.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../../support/factories.js';
import { startTestService, type TestService } from '../../support/service.js';

const MAX_BYTES = 10 * 1024 * 1024;
const CREDENTIALS_KEY = randomBytes(32).toString('hex');
const PHONE_NUMBER_ID = '1000';

let platform: ChatPlatform;
let svc: TestService;

function chatEnv(graphUrl: string, accessToken: string): Record<string, string> {
  return {
    SVC_CHAT_GRAPH_URL: graphUrl,
    SVC_CHAT_ACCESS_TOKEN: accessToken,
    SVC_CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    SVC_CHAT_MEDIA_MAX_BYTES: String(MAX_BYTES),
    SVC_CHAT_CREDENTIALS_KEY: CREDENTIALS_KEY,
  };
}

beforeAll(async () => {
  platform = await startChatPlatform();
  svc = await startTestService({
    plugins: {},
    env: chatEnv(platform.graphUrl, platform.accessToken),
  });
});

afterAll(async () => {
  await svc?.stop();
  await platform?.close();
});

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

interface Seeded {
  conversationId: string;
  messageId: string;
}

interface SeedOptions {
  mediaId: string | null;
  state?: string | null;
  fileName?: string | null;
  mimeType?: string | null;
  /** SQL for media_next_at; default now(). */
  dueIn?: string;
}

/** A contact, a conversation and an inbound message carrying `mediaId`, as inbound stores them. */
async function seedMessage(
  db: TestDatabase,
  workspaceId: string,
  options: SeedOptions,
): Promise<Seeded> {
  const sql = db.database.sql;
  const peer = `1555${randomBytes(4).readUInt32BE()}`;
  const [contact] = await sql<{ id: string }[]>`
    insert into contacts (workspace_id, name) values (${workspaceId}, 'Ada') returning id`;
  const [conversation] = await sql<{ id: string }[]>`
    insert into chat_conversations (workspace_id, contact_id, peer, phone_number_id, last_message_at)
    values (${workspaceId}, ${contact!.id}, ${peer}, ${PHONE_NUMBER_ID}, now()) returning id`;
  const state = options.state === undefined ? (options.mediaId ? 'pending' : null) : options.state;
  const [message] = await sql<{ id: string }[]>`
    insert into chat_messages (workspace_id, conversation_id, direction, external_id, type,
      content, sent_at, media_id, media_mime_type, media_file_name, media_state, media_next_at)
    values (${workspaceId}, ${conversation!.id}, 'in', ${`wamid.${randomBytes(12).toString('hex')}`},
      ${options.mediaId ? 'document' : 'text'}, 'see attached', now(), ${options.mediaId},
      ${options.mimeType ?? null}, ${options.fileName ?? null}, ${state},
      ${state === 'pending' ? sql.unsafe(options.dueIn ?? 'now()') : null})
    returning id`;
  if (state === 'pending') wakeMediaWorker();
  return { conversationId: conversation!.id, messageId: message!.id };
}

interface MediaRow {
  media_state: string | null;
  media_attempts: number;
  media_error: string | null;
  media_bytes: string | null;
  due_in_seconds: number | null;
}

async function mediaRow(db: TestDatabase, messageId: string): Promise<MediaRow> {
  const [row] = await db.database.sql<MediaRow[]>`
    select media_state, media_attempts, media_error, media_bytes,
      extract(epoch from media_next_at - now())::float8 as due_in_seconds
    from chat_messages where id = ${messageId}`;
  if (!row) throw new Error(`message ${messageId} is gone`);
  return row;
}

/** Polls the row (every 50 ms, at most 20 s) until `done` holds; answers it. */
async function waitForRow(
  db: TestDatabase,
  messageId: string,
  done: (row: MediaRow) => boolean,
): Promise<MediaRow> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const row = await mediaRow(db, messageId);
    if (done(row)) return row;
    if (Date.now() > deadline) throw new Error(`media never settled: ${JSON.stringify(row)}`);
    wakeMediaWorker();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const settled = (row: MediaRow) => row.media_state !== 'pending';

function mediaPath(seeded: Seeded): string {
  return `/api/plugins/chat/conversations/${seeded.conversationId}/messages/${seeded.messageId}/media`;
}

async function getMedia(
  seeded: Seeded,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const response = await svc.request(mediaPath(seeded), {
    method,
    headers: { ...svc.adminHeaders, ...headers },
  });
  return {
    status: response.status,
    headers: response.headers,
    body: Buffer.from(await response.arrayBuffer()),
  };
}

/** A stored file: registered on the platform, seeded, downloaded. */
async function storedFile(
  bytes: Buffer,
  mimeType = 'application/pdf',
  fileName: string | null = 'report.pdf',
): Promise<Seeded> {
  // The name travels in the webhook (media_file_name), not in the download.
  const mediaId = platform.addMedia({ bytes, mimeType });
  const seeded = await seedMessage(svc.db, svc.workspace.id, { mediaId, fileName, mimeType });
  const row = await waitForRow(svc.db, seeded.messageId, settled);
  expect(row.media_state).toBe('stored');
  return seeded;
}

describe('download', () => {
  test('stores the file with its type, size and hash, and records chat.media.settled', async () => {
    const bytes = randomBytes(50_000);
    const mediaId = platform.addMedia({ bytes, mimeType: 'image/png' });
    const seeded = await seedMessage(svc.db, svc.workspace.id, { mediaId, fileName: 'photo.png' });
    const row = await waitForRow(svc.db, seeded.messageId, settled);
    expect(row).toMatchObject({ media_state: 'stored', media_attempts: 1, media_error: null });
    expect(Number(row.media_bytes)).toBe(bytes.length);
    expect(platform.mediaLookups(mediaId)).toBe(1);
    expect(platform.mediaDownloads(mediaId)).toBe(1);

    const [file] = await svc.db.database.sql<
      { content_type: string; size: string; sha256: string; bytes: Buffer }[]
    >`select content_type, size, sha256, bytes from chat_media where message_id = ${seeded.messageId}`;
    expect(file).toEqual({
      content_type: 'image/png',
      size: String(bytes.length),
      sha256: sha256(bytes),
      bytes,
    });
    const events = await svc.db.database.sql<{ name: string; data: Record<string, unknown> }[]>`
      select name, data from events
      where workspace_id = ${svc.workspace.id} and name = 'chat.media.settled'
        and data->>'message_id' = ${seeded.messageId}`;
    expect(events).toEqual([
      {
        name: 'chat.media.settled',
        data: expect.objectContaining({
          conversation_id: seeded.conversationId,
          message_id: seeded.messageId,
          media_state: 'stored',
        }),
      },
    ]);
  });

  test('the bytes column is stored uncompressed out of line (STORAGE EXTERNAL)', async () => {
    const [column] = await svc.db.database.sql<{ attstorage: string }[]>`
      select attstorage from pg_attribute
      where attrelid = 'chat_media'::regclass and attname = 'bytes'`;
    expect(column?.attstorage).toBe('e');
  });

  test('a file over SVC_CHAT_MEDIA_MAX_BYTES is too_large and never downloaded', async () => {
    const mediaId = platform.addMedia({
      bytes: Buffer.alloc(MAX_BYTES + 1, 7),
      mimeType: 'video/mp4',
      fileName: 'holiday.mp4',
    });
    const seeded = await seedMessage(svc.db, svc.workspace.id, {
      mediaId,
      fileName: 'holiday.mp4',
    });
    const row = await waitForRow(svc.db, seeded.messageId, settled);
    expect(row.media_state).toBe('too_large');
    expect(Number(row.media_bytes)).toBe(MAX_BYTES + 1);
    expect(platform.mediaLookups(mediaId)).toBe(1);
    expect(platform.mediaDownloads(mediaId)).toBe(0);
    const [{ count } = { count: -1 }] = await svc.db.database.sql<{ count: number }[]>`
      select count(*)::int as count from chat_media where message_id = ${seeded.messageId}`;
    expect(count).toBe(0);
    expect((await getMedia(seeded)).status).toBe(404);
    // Settled for good: the worker never comes back to it.
    const [event] = await svc.db.database.sql<{ data: { media_state: string } }[]>`
      select data from events where name = 'chat.media.settled'
        and data->>'message_id' = ${seeded.messageId}`;
    expect(event?.data.media_state).toBe('too_large');
  });

  test('a file the platform reports too large is too_large without a download', async () => {
    const mediaId = platform.addMedia({
      bytes: Buffer.from('small really'),
      mimeType: 'application/pdf',
      reportSize: MAX_BYTES * 3,
    });
    const seeded = await seedMessage(svc.db, svc.workspace.id, { mediaId });
    const row = await waitForRow(svc.db, seeded.messageId, settled);
    expect(row.media_state).toBe('too_large');
    expect(platform.mediaDownloads(mediaId)).toBe(0);
  });

  test('a download running past the cap is cut short and too_large', async () => {
    // The lookup understates the size; the download itself passes the cap.
    const mediaId = platform.addMedia({
      bytes: Buffer.alloc(MAX_BYTES + 100, 1),
      mimeType: 'application/zip',
      reportSize: 1000,
    });
    const seeded = await seedMessage(svc.db, svc.workspace.id, { mediaId });
    const row = await waitForRow(svc.db, seeded.messageId, settled);
    expect(row.media_state).toBe('too_large');
    expect(platform.mediaDownloads(mediaId)).toBe(1);
    const [{ count } = { count: -1 }] = await svc.db.database.sql<{ count: number }[]>`
      select count(*)::int as count from chat_media where message_id = ${seeded.messageId}`;
    expect(count).toBe(0);
  });

  test('a platform outage keeps the message pending with a widening wait; it stores once the platform is back', async () => {
    const bytes = randomBytes(3000);
    const mediaId = platform.addMedia({ bytes, mimeType: 'audio/ogg' });
    platform.setDown(true);
    try {
      const seeded = await seedMessage(svc.db, svc.workspace.id, { mediaId });
      const first = await waitForRow(svc.db, seeded.messageId, (r) => r.media_error !== null);
      expect(first).toMatchObject({ media_state: 'pending', media_attempts: 1 });
      expect(first.media_error).toMatch(/^lookup answered 503/);
      expect(first.media_error).not.toContain(platform.accessToken);
      // About 5 s after the first failure (not the 2-minute lease).
      expect(first.due_in_seconds).toBeGreaterThan(2);
      expect(first.due_in_seconds).toBeLessThan(6);

      // Due again now, rather than after the wait; still down: the wait widens.
      await svc.db.database.sql`
        update chat_messages set media_next_at = now(), media_error = null
        where id = ${seeded.messageId}`;
      wakeMediaWorker();
      const second = await waitForRow(svc.db, seeded.messageId, (r) => r.media_error !== null);
      expect(second).toMatchObject({ media_state: 'pending', media_attempts: 2 });
      expect(second.due_in_seconds).toBeGreaterThan(first.due_in_seconds! + 2);
      expect(second.due_in_seconds).toBeLessThan(11);

      platform.setDown(false);
      await svc.db.database.sql`
        update chat_messages set media_next_at = now() where id = ${seeded.messageId}`;
      wakeMediaWorker();
      const stored = await waitForRow(svc.db, seeded.messageId, settled);
      expect(stored).toMatchObject({ media_state: 'stored', media_attempts: 3, media_error: null });
      expect((await getMedia(seeded)).body).toEqual(bytes);
    } finally {
      platform.setDown(false);
    }
  });

  test('a failed download past 24 hours since the message arrived is failed, and settled', async () => {
    platform.setDown(true);
    try {
      const mediaId = platform.addMedia({ bytes: Buffer.from('late'), mimeType: 'text/plain' });
      const seeded = await seedMessage(svc.db, svc.workspace.id, {
        mediaId,
        dueIn: "now() + interval '1 day'",
      });
      await svc.db.database.sql`
        update chat_messages set created_at = now() - interval '25 hours', media_next_at = now()
        where id = ${seeded.messageId}`;
      wakeMediaWorker();
      const row = await waitForRow(svc.db, seeded.messageId, settled);
      expect(row.media_state).toBe('failed');
      expect(row.media_error).toMatch(/^lookup answered 503/);
      const [event] = await svc.db.database.sql<{ data: { media_state: string } }[]>`
        select data from events where name = 'chat.media.settled'
          and data->>'message_id' = ${seeded.messageId}`;
      expect(event?.data.media_state).toBe('failed');
      expect((await getMedia(seeded)).status).toBe(404);
    } finally {
      platform.setDown(false);
    }
  });

  test('an 8 MiB file streams back whole and in ranges across read chunks', async () => {
    const bytes = randomBytes(8 * 1024 * 1024);
    const seeded = await storedFile(bytes, 'video/mp4', 'big.mp4');
    const whole = await getMedia(seeded);
    expect(whole.status).toBe(200);
    expect(whole.body.length).toBe(bytes.length);
    expect(sha256(whole.body)).toBe(sha256(bytes));
    expect(whole.headers.get('etag')).toBe(`"${sha256(bytes)}"`);

    const from = 256 * 1024 - 10;
    const to = 3 * 256 * 1024 + 10;
    const part = await getMedia(seeded, { range: `bytes=${from}-${to}` });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes ${from}-${to}/${bytes.length}`);
    expect(part.body.equals(bytes.subarray(from, to + 1))).toBe(true);
  });
});

describe('the media route', () => {
  const bytes = randomBytes(1000);
  let seeded: Seeded;

  beforeAll(async () => {
    seeded = await storedFile(bytes, 'application/pdf', 'Bericht über "Q3".pdf');
  });

  test('answers the bytes with the stored type, caching, ETag and sandboxing headers', async () => {
    const { status, headers, body } = await getMedia(seeded);
    expect(status).toBe(200);
    expect(body.equals(bytes)).toBe(true);
    expect(headers.get('content-type')).toBe('application/pdf');
    expect(headers.get('content-length')).toBe(String(bytes.length));
    expect(headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
    expect(headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    expect(headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(headers.get('accept-ranges')).toBe('bytes');
    expect(headers.get('content-disposition')).toBe(
      `inline; filename="Bericht _ber _Q3_.pdf"; filename*=UTF-8''Bericht%20%C3%BCber%20%22Q3%22.pdf`,
    );
  });

  test('a session reads it too', async () => {
    const { sessionCookieFor } = await import('../../support/factories.js');
    const cookie = await sessionCookieFor(svc.db.database.db, svc.admin);
    const response = await svc.request(mediaPath(seeded), { headers: { cookie } });
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
  });

  test('HEAD answers the headers without the body', async () => {
    const { status, headers, body } = await getMedia(seeded, {}, 'HEAD');
    expect(status).toBe(200);
    expect(headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    expect(headers.get('content-type')).toBe('application/pdf');
    expect(headers.get('content-length')).toBe(String(bytes.length));
    expect(body.length).toBe(0);
  });

  test('a large text file is sent as stored: its length, never compressed', async () => {
    const text = Buffer.from('line of text\n'.repeat(20_000));
    const file = await storedFile(text, 'text/plain', 'notes.txt');
    const { status, headers, body } = await getMedia(file, { 'accept-encoding': 'gzip, br' });
    expect(status).toBe(200);
    expect(headers.get('content-encoding')).toBeNull();
    expect(headers.get('content-length')).toBe(String(text.length));
    expect(body.equals(text)).toBe(true);
    const range = await getMedia(file, { 'accept-encoding': 'gzip', range: 'bytes=13-25' });
    expect(range.status).toBe(206);
    expect(range.body.toString()).toBe('line of text\n');
  });

  test('If-None-Match naming the ETag answers 304 without a body', async () => {
    const etag = `"${sha256(bytes)}"`;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const { status, headers, body } = await getMedia(seeded, { 'if-none-match': header });
      expect(status).toBe(304);
      expect(headers.get('etag')).toBe(etag);
      expect(headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
      expect(body.length).toBe(0);
    }
    expect((await getMedia(seeded, { 'if-none-match': '"other"' })).status).toBe(200);
  });

  test.each([
    ['bytes=10-19', 10, 19],
    ['bytes=990-', 990, 999],
    ['bytes=-25', 975, 999],
    ['bytes=500-100000', 500, 999],
    ['bytes=-5000', 0, 999],
    ['bytes=0-0', 0, 0],
  ])('Range %s answers 206 with bytes %i-%i', async (range, from, to) => {
    const { status, headers, body } = await getMedia(seeded, { range });
    expect(status).toBe(206);
    expect(headers.get('content-range')).toBe(`bytes ${from}-${to}/1000`);
    expect(headers.get('content-length')).toBe(String(to - from + 1));
    expect(headers.get('content-type')).toBe('application/pdf');
    expect(body.equals(bytes.subarray(from, to + 1))).toBe(true);
  });

  test.each(['bytes=1000-', 'bytes=5000-6000', 'bytes=-0'])(
    'an unsatisfiable Range (%s) answers 416 naming the size',
    async (range) => {
      const { status, headers, body } = await getMedia(seeded, { range });
      expect(status).toBe(416);
      expect(headers.get('content-range')).toBe('bytes */1000');
      expect(body.length).toBe(0);
    },
  );

  test('a Range it ignores (several ranges, not bytes, a stale If-Range) answers the whole file', async () => {
    const ignored: Record<string, string>[] = [
      { range: 'bytes=0-1,5-6' },
      { range: 'items=0-1' },
      { range: 'bytes=9-2' },
      { range: 'bytes=0-9', 'if-range': '"stale"' },
    ];
    for (const headers of ignored) {
      const answer = await getMedia(seeded, headers);
      expect(answer.status).toBe(200);
      expect(answer.body.equals(bytes)).toBe(true);
    }
    const current = await getMedia(seeded, {
      range: 'bytes=0-9',
      'if-range': `"${sha256(bytes)}"`,
    });
    expect(current.status).toBe(206);
  });

  test('answers 404 for pending, failed and too_large media and for a message without media', async () => {
    const pending = await seedMessage(svc.db, svc.workspace.id, {
      mediaId: 'not-yet',
      dueIn: "now() + interval '1 day'",
    });
    const failed = await seedMessage(svc.db, svc.workspace.id, {
      mediaId: 'gone',
      state: 'failed',
    });
    const tooLarge = await seedMessage(svc.db, svc.workspace.id, {
      mediaId: 'huge',
      state: 'too_large',
    });
    const none = await seedMessage(svc.db, svc.workspace.id, { mediaId: null });
    for (const target of [pending, failed, tooLarge, none]) {
      const { status, headers, body } = await getMedia(target);
      expect(status).toBe(404);
      expect(headers.get('etag')).toBeNull();
      expect(JSON.parse(body.toString())).toEqual({ error: 'not found' });
    }
  });

  test('answers 404 for ids that are not UUIDs or name another conversation', async () => {
    const other = await seedMessage(svc.db, svc.workspace.id, { mediaId: null });
    for (const target of [
      { conversationId: 'abc', messageId: seeded.messageId },
      { conversationId: seeded.conversationId, messageId: 'not-a-uuid' },
      { conversationId: other.conversationId, messageId: seeded.messageId },
    ]) {
      expect((await getMedia(target)).status).toBe(404);
    }
  });

  test('a token without chat:read gets 403, even on a path the plugin does not serve', async () => {
    const narrow = bearer(
      await tokenFor(svc.db.database.db, svc.admin, {
        scopes: ['contacts:read'],
        catalogue: svc.service.access,
      }),
    );
    for (const path of [mediaPath(seeded), '/api/plugins/chat/no/such/path']) {
      const response = await svc.request(path, { headers: narrow });
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({ error: 'scope required: chat:read' });
    }
    const reader = bearer(
      await tokenFor(svc.db.database.db, svc.admin, {
        scopes: ['chat:read'],
        catalogue: svc.service.access,
      }),
    );
    const served = await svc.request(mediaPath(seeded), { headers: reader });
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
    const unserved = await svc.request(`/api/plugins/chat/no/such/path`, { headers: reader });
    expect(unserved.status).toBe(404);
    const anonymous = await svc.request(mediaPath(seeded));
    expect(anonymous.status).toBe(401);
  });

  test('a user holding SVC_STREAMS_PER_USER downloads gets 429 with Retry-After; the webhook stays open', async () => {
    const big = await storedFile(randomBytes(8 * 1024 * 1024), 'video/mp4', 'clip.mp4');
    // Five downloads whose bodies are not read stay open (the stream waits on the client).
    const open = await Promise.all(
      Array.from({ length: 5 }, () => svc.request(mediaPath(big), { headers: svc.adminHeaders })),
    );
    try {
      expect(open.map((response) => response.status)).toEqual([200, 200, 200, 200, 200]);
      const refused = await svc.request(mediaPath(big), { headers: svc.adminHeaders });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      await refused.body?.cancel();
      // Public paths are exempt: the platform's webhook is still answered.
      const handshake = await svc.request(`/api/plugins/chat/webhook?hub.mode=subscribe`);
      expect(handshake.status).toBe(403); // no verify token in this service: refused, not 429
    } finally {
      await Promise.all(open.map((response) => response.body?.cancel()));
    }
    // The slots come back as the server sees each client go: the next tests start after.
    const deadline = Date.now() + 10_000;
    let status = 429;
    while (status === 429 && Date.now() < deadline) {
      const response = await svc.request(mediaPath(big), {
        method: 'HEAD',
        headers: svc.adminHeaders,
      });
      status = response.status;
    }
    expect(status).toBe(200);
  });

  // Last in this file's service: a second workspace ends the environment line's single
  // workspace, so the first is connected with its own line before it is made.
  test("another workspace's caller gets 404 for this workspace's media, and its own works", async () => {
    await connectWorkspace(
      svc.db.database.db,
      { chat: { credentialsKey: Buffer.from(CREDENTIALS_KEY, 'hex') } } as Config,
      {
        workspaceId: svc.workspace.id,
        phoneNumberId: PHONE_NUMBER_ID,
        accessToken: platform.accessToken,
      },
    );
    const elsewhere = await createWorkspace(svc.db.database.db);
    const stranger = await createUser(svc.db.database.db, elsewhere, { role: 'admin' });
    const theirs = bearer(await tokenFor(svc.db.database.db, stranger));
    const answer = await svc.request(mediaPath(seeded), { headers: theirs });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual({ error: 'not found' });

    // This workspace still downloads through its own connection.
    const more = randomBytes(100);
    const again = await storedFile(more, 'image/jpeg', null);
    const mine = await getMedia(again);
    expect(mine.body.equals(more)).toBe(true);
    expect(mine.headers.get('content-disposition')).toBe('inline');
    expect((await svc.request(mediaPath(again), { headers: theirs })).status).toBe(404);
  });
});

describe('a restart', () => {
  let db: TestDatabase;
  let other: ChatPlatform;

  beforeAll(async () => {
    db = await createTestDatabase();
    other = await startChatPlatform();
  });

  afterAll(async () => {
    await other?.close();
    await db?.drop();
  });

  test('media left pending by a stopped service is downloaded by the next one', async () => {
    const env = chatEnv(other.graphUrl, other.accessToken);
    const first = await startTestService({ db, plugins: {}, env });
    const bytes = randomBytes(4096);
    const mediaId = other.addMedia({ bytes, mimeType: 'image/webp' });
    other.setDown(true);
    let seeded: Seeded;
    try {
      seeded = await seedMessage(db, first.workspace.id, { mediaId });
      await waitForRow(db, seeded.messageId, (r) => r.media_error !== null);
      // The next service makes a workspace of its own: this one keeps its line by a connection.
      await connectWorkspace(
        db.database.db,
        { chat: { credentialsKey: Buffer.from(CREDENTIALS_KEY, 'hex') } } as Config,
        {
          workspaceId: first.workspace.id,
          phoneNumberId: PHONE_NUMBER_ID,
          accessToken: other.accessToken,
        },
      );
    } finally {
      await first.stop();
    }
    other.setDown(false);
    expect((await mediaRow(db, seeded.messageId)).media_state).toBe('pending');
    // Due now, rather than after the widening wait.
    await db.database
      .sql`update chat_messages set media_next_at = now() where id = ${seeded.messageId}`;
    const second = await startTestService({ db, plugins: {}, env });
    try {
      const row = await waitForRow(db, seeded.messageId, settled);
      expect(row).toMatchObject({ media_state: 'stored', media_attempts: 2 });
      const response = await second.request(mediaPath(seeded), {
        headers: bearer(
          await tokenFor(
            db.database.db,
            await createUser(db.database.db, first.workspace, { role: 'admin' }),
          ),
        ),
      });
      expect(response.status).toBe(200);
      expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(sha256(bytes));
    } finally {
      await second.stop();
    }
  });

  test('a claim whose process died mid-download is due again once its lease runs out', async () => {
    const svc3 = await startTestService({
      db,
      plugins: {},
      env: chatEnv(other.graphUrl, other.accessToken),
    });
    try {
      const [workspace] = await db.database.sql<{ workspace_id: string }[]>`
        select workspace_id from chat_connections limit 1`;
      const bytes = randomBytes(2048);
      const mediaId = other.addMedia({ bytes, mimeType: 'image/gif' });
      // What a claim leaves behind: one attempt counted, due again at the end of its lease.
      const seeded = await seedMessage(db, workspace!.workspace_id, {
        mediaId,
        dueIn: "now() + interval '2 minutes'",
      });
      await db.database
        .sql`update chat_messages set media_attempts = 1 where id = ${seeded.messageId}`;
      // The lease runs out.
      await db.database
        .sql`update chat_messages set media_next_at = now() where id = ${seeded.messageId}`;
      const row = await waitForRow(db, seeded.messageId, settled);
      expect(row).toMatchObject({ media_state: 'stored', media_attempts: 2 });
    } finally {
      await svc3.stop();
    }
  });
});

test('the worker logged no errors along the way', () => {
  const errors = svc.lines.filter((line) => line.level === 'error' || line.level === 'fatal');
  expect(errors).toEqual([]);
});
