// Issue 29: a burst of events recorded while two `svc serve` processes run is delivered
// exactly once across them: every event reaches the receiver once, every delivery is
// `delivered` after one attempt, and the two processes' attempt counters add up to the
// events (no attempt was made twice, not even one whose answer was lost).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { freePort } from '../../src/dev/free-port.js';
import { recordEvent } from '../../src/events/service.js';
import { webhooks } from '../../src/webhooks/tables.js';
import { serveProcesses } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createUser, createWorkspace } from '../support/factories.js';

const EVENTS = 400;
const WRITERS = 4;

/** Envelope ids in the order they arrived, repeats included. */
const arrivals: string[] = [];
let arrived: () => void = () => {};
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    arrivals.push((JSON.parse(Buffer.concat(chunks).toString()) as { id: string }).id);
    res.writeHead(204).end();
    arrived();
  });
});
const serve = serveProcesses();
let db: TestDatabase;

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  db = await createTestDatabase();
});

afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  await db.drop();
});

/** The process's delivery attempts by outcome, read from its metrics listener. */
async function attempts(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const [, outcome, value] of text.matchAll(
    /^svc_webhook_delivery_attempts_total\{outcome="(\w+)"\} (\d+)$/gm,
  )) {
    counts[outcome!] = Number(value);
  }
  return counts;
}

test('two processes deliver a burst of events exactly once', async () => {
  const ports = [await freePort(), await freePort()];
  const env = (port: number) => ({
    SVC_DATABASE_URL: db.url,
    SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32',
    SVC_METRICS_ADDR: `127.0.0.1:${port}`,
  });
  // One at a time: the first applies the migrations the second then finds current.
  await serve(env(ports[0]!));
  await serve(env(ports[1]!));
  const workspace = await createWorkspace(db.database.db);
  const user = await createUser(db.database.db, workspace, { role: 'admin' });
  await db.database.db.insert(webhooks).values({
    workspaceId: workspace.id,
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
    events: ['task.created'],
    secret: 'burst-secret',
    createdBy: user.id,
  });
  const all = new Promise<void>((resolve) => {
    arrived = () => {
      if (new Set(arrivals).size === EVENTS) resolve();
    };
  });
  // Four writers at once, each event in its own transaction, as mutations record them.
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      for (let i = writer; i < EVENTS; i += WRITERS) {
        ids.push(
          await db.database.db.transaction((tx) =>
            recordEvent(tx, {
              workspaceId: workspace.id,
              name: 'task.created',
              subjectId: randomUUID(),
              data: { i },
            }),
          ),
        );
      }
    }),
  );
  await all;
  // The outcome is written after the receiver answered: wait for the last one.
  for (;;) {
    const [left] = await db.database.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where status <> 'delivered'`;
    if (left?.n === 0) break;
  }
  expect(arrivals).toHaveLength(EVENTS);
  expect(new Set(arrivals)).toEqual(new Set(ids));
  const rows = await db.database.sql<{ attempts: number; n: number }[]>`
    select attempts, count(*)::int as n from webhook_deliveries group by attempts`;
  expect(rows).toEqual([{ attempts: 1, n: EVENTS }]);
  const [a, b] = await Promise.all(ports.map((port) => attempts(`http://127.0.0.1:${port}`)));
  expect((a!.delivered ?? 0) + (b!.delivered ?? 0)).toBe(EVENTS);
}, 60_000);
