// SPEC 6 across real processes: two `svc serve` sharing one database; a write on one
// reaches a stream opened on the other, and a revoked credential's streams end on both
// (SPEC 5) well inside SVC_STREAM_LIFETIME, set to 5 minutes here.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { runSvc, serveProcesses } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../support/factories.js';
import { COMPLETE, endOf, openStream, type SseStream } from './sse.js';

let db: TestDatabase;
const serveProcess = serveProcesses();

async function serve(): Promise<string> {
  return (await serveProcess({ SVC_DATABASE_URL: db.url, SVC_STREAM_LIFETIME: '5m' })).url;
}

let first: string;
let second: string;

beforeAll(async () => {
  db = await createTestDatabase();
  [first, second] = await Promise.all([serve(), serve()]);
}, 60_000);

afterAll(async () => {
  await db.drop();
});

test('a contact created through one server process streams contact.created on another', async () => {
  const workspace = await createWorkspace(db.database.db);
  const user = await createUser(db.database.db, workspace, { role: 'member' });
  const headers = bearer(await tokenFor(db.database.db, user));
  const stream = await openStream(second, headers);
  try {
    const response = await fetch(`${first}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        query: 'mutation { createContact(input: { name: "Katherine Johnson" }) { id } }',
      }),
    });
    const created = (await response.json()) as { data: { createContact: { id: string } } };
    const frame = await stream.next();
    expect(frame.data?.coreEvent).toMatchObject({
      name: 'contact.created',
      subjectId: created.data.createContact.id,
    });
  } finally {
    stream.close();
    await stream.ended;
  }
}, 60_000);

/** Expects the server to complete `stream` within 10 s, far under its lifetime. */
async function completes(stream: SseStream): Promise<void> {
  expect(await endOf(stream, 10_000)).toEqual(COMPLETE);
}

async function post(url: string, headers: Record<string, string>, query: string) {
  const response = await fetch(`${url}/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return (await response.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
}

test('disabling an account through one server process ends its stream on another', async () => {
  const workspace = await createWorkspace(db.database.db);
  const admin = await createUser(db.database.db, workspace, { role: 'admin' });
  const user = await createUser(db.database.db, workspace, { role: 'member' });
  const stream = await openStream(second, bearer(await tokenFor(db.database.db, user)));
  try {
    const disabled = await post(
      first,
      bearer(await tokenFor(db.database.db, admin)),
      `mutation { setUserDisabled(userId: "${user.id}", disabled: true) { disabled } }`,
    );
    expect(disabled).toEqual({ data: { setUserDisabled: { disabled: true } } });
    await completes(stream);
  } finally {
    stream.close();
    await stream.ended;
  }
}, 60_000);

test('svc workspace:deactivate ends the workspace’s streams on every process; another workspace’s stream stays open', async () => {
  const [workspace, other] = await Promise.all([
    createWorkspace(db.database.db),
    createWorkspace(db.database.db),
  ]);
  const user = await createUser(db.database.db, workspace, { role: 'member' });
  const bystander = await createUser(db.database.db, other, { role: 'admin' });
  const bystanderHeaders = bearer(await tokenFor(db.database.db, bystander));
  const headers = bearer(await tokenFor(db.database.db, user));
  const streams = await Promise.all([
    openStream(first, headers),
    openStream(second, headers),
    openStream(second, bystanderHeaders),
  ]);
  const [onFirst, onSecond, elsewhere] = streams as [SseStream, SseStream, SseStream];
  try {
    const cli = await runSvc(['workspace:deactivate', '-workspace', workspace.id, '-as', 'ops'], {
      SVC_DATABASE_URL: db.url,
    });
    expect(cli.code).toBe(0);
    await Promise.all([completes(onFirst), completes(onSecond)]);
    await post(
      first,
      bystanderHeaders,
      'mutation { createContact(input: { name: "Ada" }) { id } }',
    );
    expect((await elsewhere.next()).data?.coreEvent).toMatchObject({ name: 'contact.created' });
  } finally {
    for (const stream of streams) stream.close();
    await Promise.all(streams.map((stream) => stream.ended));
  }
}, 60_000);
