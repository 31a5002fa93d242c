// New deliveries wake every process's worker through NOTIFY at commit: with the poll set to
// an hour, a delivery still arrives as soon as its event's transaction commits.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { recordEvent } from '../../src/events/service.js';
import { webhooks } from '../../src/webhooks/tables.js';
import { startWebhookWorker, type WebhookWorker } from '../../src/webhooks/worker.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createUser, createWorkspace } from '../support/factories.js';
import { captureLogger, testConfig } from '../support/service.js';

const arrivals: { id: string; name: string }[] = [];
let arrived: () => void = () => {};
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    arrivals.push(JSON.parse(Buffer.concat(chunks).toString()) as { id: string; name: string });
    res.writeHead(204).end();
    arrived();
  });
});

let db: TestDatabase;
let worker: WebhookWorker;

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  db = await createTestDatabase();
  worker = startWebhookWorker({
    database: db.database,
    config: testConfig({ SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' }),
    log: captureLogger().log,
    pollMs: 3_600_000,
  });
});
afterAll(async () => {
  await worker.stop();
  await db.drop();
  receiver.close();
});

test('a delivery is sent at its event’s commit, not at the next poll', async () => {
  expect(await worker.listening).toBe(true);
  const workspace = await createWorkspace(db.database.db);
  const user = await createUser(db.database.db, workspace, { role: 'admin' });
  const port = (receiver.address() as AddressInfo).port;
  await db.database.db.insert(webhooks).values({
    workspaceId: workspace.id,
    url: `http://127.0.0.1:${port}/hook`,
    events: ['task.created'],
    secret: 'wake-secret',
    createdBy: user.id,
  });

  const delivered = new Promise<void>((resolve) => (arrived = resolve));
  const eventId = await db.database.db.transaction((tx) =>
    recordEvent(tx as never, {
      workspaceId: workspace.id,
      name: 'task.created',
      subjectId: randomUUID(),
    }),
  );
  await delivered;
  expect(arrivals).toEqual([expect.objectContaining({ id: eventId, name: 'task.created' })]);
});
