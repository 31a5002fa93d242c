// Deliveries are durable jobs in PostgreSQL: they survive a SIGKILL, and several server
// processes deliver each event once. Runs the real `svc serve`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { serveProcesses } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../support/factories.js';

let db: TestDatabase;
const serveProcess = serveProcesses();
let receiver: Server;
let receiverUrl = '';
/** Event ids in the order deliveries arrived. */
const delivered: string[] = [];
/** While set, the receiver holds requests open without answering. */
let holding = false;
const held: (() => void)[] = [];
let headers: Record<string, string>;

function serve() {
  return serveProcess({ SVC_DATABASE_URL: db.url, SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' });
}

async function graph(url: string, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${url}/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
  expect(body.errors).toBeUndefined();
  return body.data;
}

async function createTasks(url: string, count: number, prefix: string): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    await graph(
      url,
      'mutation ($t: String!) { createTask(input: { title: $t }) { task { id } } }',
      {
        t: `${prefix} ${i}`,
      },
    );
  }
}

/** Resolves once `done()` holds, checking after each delivery that arrives. */
function deliveredWhen(done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (done() ? resolve() : setImmediate(check));
    check();
  });
}

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = () => {
        delivered.push((JSON.parse(Buffer.concat(chunks).toString()) as { id: string }).id);
        res.writeHead(200).end();
      };
      if (holding) held.push(() => res.destroy());
      else answer();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const workspace = await createWorkspace(db.database.db);
  const admin = await createUser(db.database.db, workspace, { role: 'admin' });
  headers = bearer(await tokenFor(db.database.db, admin));
});

afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
  await db.drop();
});

test('deliveries pending when the server is killed with SIGKILL are delivered after a restart', async () => {
  const first = await serve();
  await graph(
    first.url,
    'mutation ($u: String!) { createWebhook(url: $u, events: ["task.created"]) { secret } }',
    {
      u: receiverUrl,
    },
  );
  holding = true;
  await createTasks(first.url, 3, 'before the crash');
  // Wait until the first attempt is in flight, then kill the process mid-delivery.
  await new Promise<void>((resolve) => {
    const check = () => (held.length > 0 ? resolve() : setImmediate(check));
    check();
  });
  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));
  for (const drop of held.splice(0)) drop();
  holding = false;
  const [pending] = await db.database.sql`
    select count(*)::int as n from webhook_deliveries where status = 'pending'`;
  expect(pending?.n).toBe(3);
  // The dead process's claim would lapse on its own; make the rows due to keep the test short.
  await db.database
    .sql`update webhook_deliveries set next_attempt_at = now() where status = 'pending'`;
  await serve();
  const events = await db.database.sql`select id::text from events where name = 'task.created'`;
  const ids = events.map((row) => row.id as string);
  await deliveredWhen(() => ids.every((id) => delivered.includes(id)));
  // The worker marks a delivery after the receiver answered; wait for the last mark.
  for (;;) {
    const [left] = await db.database.sql`
      select count(*)::int as n from webhook_deliveries where status <> 'delivered'`;
    if (left?.n === 0) break;
  }
}, 60_000);

test('two server processes deliver each event once', async () => {
  const [a, b] = await Promise.all([serve(), serve()]);
  delivered.length = 0;
  await Promise.all([createTasks(a.url, 10, 'on a'), createTasks(b.url, 10, 'on b')]);
  const rows = await db.database.sql`
    select id::text from events where name = 'task.created' and data->>'title' like 'on %'`;
  const ids = rows.map((row) => row.id as string);
  expect(ids).toHaveLength(20);
  await deliveredWhen(() => ids.every((id) => delivered.includes(id)));
  expect(delivered.length).toBe(new Set(delivered).size);
}, 60_000);
