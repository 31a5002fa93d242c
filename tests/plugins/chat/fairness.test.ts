// Issue 26 item 6: media downloads are fair across workspaces. A loopback server plays the
// platform (SVC_CHAT_GRAPH_URL): its "slow" files answer their headers and then hold the
// body until the test lets go, as a slow or hostile download would. Three slow downloads
// in workspace A must not delay workspace B's ordinary image: B's is stored while A's still
// hang.
import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Config } from '../../../src/config.js';
import { wakeMediaWorker } from '../../../plugins/chat/media.js';
import { connectWorkspace } from '../../../plugins/chat/settings.js';
import { createWorkspace } from '../../support/factories.js';
import { startTestService, type TestService } from '../../support/service.js';

const TOKEN = 'fair-token';
const CREDENTIALS_KEY = randomBytes(32).toString('hex');

/** Download responses held open, each released at the end. */
const held: ServerResponse[] = [];
const image = randomBytes(2048);
let origin = '';
const platform = createServer((req, res) => {
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end();
  const [, first, id] = (req.url ?? '').split('/');
  if (first === 'graph') {
    const body = JSON.stringify({
      url: `${origin}/file/${id}`,
      mime_type: 'image/jpeg',
      file_size: image.length,
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    return;
  }
  if (id?.startsWith('slow')) {
    // Headers and one byte now, the rest never (until the test ends).
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.length });
    res.write(image.subarray(0, 1));
    held.push(res);
    return;
  }
  res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.length }).end(image);
});

let svc: TestService;

beforeAll(async () => {
  await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`;
  svc = await startTestService({
    plugins: {},
    env: {
      SVC_CHAT_GRAPH_URL: `${origin}/graph`,
      SVC_CHAT_CREDENTIALS_KEY: CREDENTIALS_KEY,
    },
  });
});

afterAll(async () => {
  for (const res of held.splice(0)) res.destroy();
  await svc?.stop();
  await new Promise((resolve) => platform.close(resolve));
});

async function connected(number: string): Promise<string> {
  const workspace = await createWorkspace(svc.db.database.db);
  await connectWorkspace(
    svc.db.database.db,
    { chat: { credentialsKey: Buffer.from(CREDENTIALS_KEY, 'hex') } } as Config,
    { workspaceId: workspace.id, phoneNumberId: number, accessToken: TOKEN },
  );
  return workspace.id;
}

/** An inbound image message as inbound code stores it: pending, due now. */
async function seed(workspaceId: string, mediaId: string): Promise<string> {
  const sql = svc.db.database.sql;
  const [contact] = await sql<{ id: string }[]>`
    insert into contacts (workspace_id, name) values (${workspaceId}, 'Ada') returning id`;
  const [conversation] = await sql<{ id: string }[]>`
    insert into chat_conversations (workspace_id, contact_id, peer, phone_number_id, last_message_at)
    values (${workspaceId}, ${contact!.id}, ${`1555${randomBytes(3).readUIntBE(0, 3)}`}, '1',
      now()) returning id`;
  const [message] = await sql<{ id: string }[]>`
    insert into chat_messages (workspace_id, conversation_id, direction, external_id, type,
      content, sent_at, media_id, media_state, media_next_at)
    values (${workspaceId}, ${conversation!.id}, 'in', ${`wamid.${randomBytes(12).toString('hex')}`},
      'image', '', now(), ${mediaId}, 'pending', now())
    returning id`;
  wakeMediaWorker();
  return message!.id;
}

async function stateOf(id: string): Promise<string> {
  const [row] = await svc.db.database.sql<{ media_state: string }[]>`
    select media_state from chat_messages where id = ${id}`;
  return row!.media_state;
}

test("three slow downloads in one workspace do not delay another workspace's image", async () => {
  const a = await connected('2001');
  const b = await connected('2002');
  for (let i = 0; i < 3; i += 1) await seed(a, `slow${i}`);
  // A's downloads have taken every slot they may before B's message arrives.
  const deadline = Date.now() + 10_000;
  while (held.length < 2 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(held.length).toBeGreaterThanOrEqual(2);

  const started = Date.now();
  const imageId = await seed(b, 'fast');
  let state = await stateOf(imageId);
  while (state === 'pending' && Date.now() - started < 15_000) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    state = await stateOf(imageId);
  }
  const tookMs = Date.now() - started;
  expect(state).toBe('stored');
  expect(tookMs).toBeLessThan(3000);
  // A's slow downloads are still hanging: B did not just wait them out.
  expect(held.every((res) => !res.writableEnded)).toBe(true);
}, 30_000);
