// SPEC 6 across real processes: two `svc serve` sharing one database; a write on one
// reaches a stream opened on the other.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { finished, svc, waitForOutput } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/env.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../support/factories.js';
import { openStream } from './sse.js';

let db: TestDatabase;
const servers: { child: ChildProcessWithoutNullStreams; url: string }[] = [];

async function serve(): Promise<string> {
  const port = await freePort();
  const child = svc(['serve'], { SVC_DATABASE_URL: db.url, SVC_ADDR: `127.0.0.1:${port}` });
  void finished(child);
  servers.push({ child, url: `http://127.0.0.1:${port}` });
  await waitForOutput(child, /"msg":"listening"/);
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  for (const { child } of servers) child.kill('SIGKILL');
  await db.drop();
});

test('a contact created through one server process streams contact.created on another', async () => {
  const [first, second] = await Promise.all([serve(), serve()]);
  const workspace = await createWorkspace(db.database.db);
  const user = await createUser(db.database.db, workspace, { role: 'member' });
  const headers = bearer(await tokenFor(db.database.db, user));
  const stream = await openStream(second as string, headers);
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
