// npm run bench:webhooks: deliveries per second to a local receiver for 10,000 events
// (BENCH_EVENTS) written by four writers at once, then event-to-delivery latency (receiver
// arrival minus the event's `at`) for 200 events (BENCH_PACED) written one every 20 ms, as
// an app's ordinary traffic would. The events are recorded the way writes record them
// (recordEvent in a transaction), so each one enqueues its delivery in that transaction.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase } from '../../src/db/client.js';
import { recordEvent } from '../../src/events/service.js';
import { createAccount } from '../../src/users/service.js';
import { createWorkspace } from '../../src/workspaces/service.js';
import { webhooks } from '../../src/webhooks/tables.js';
import { scratchDatabase, startServe } from './support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const PACED = Number(process.env.BENCH_PACED ?? 200);

let latencies: number[] = [];
let expected = 0;
let resolveAll: () => void = () => {};
const seen = new Set<string>();
/** Resolves once `count` more distinct events have arrived. */
function deliveriesOf(count: number): Promise<void> {
  latencies = [];
  expected = seen.size + count;
  return new Promise<void>((resolve) => (resolveAll = resolve));
}
function percentiles(): string {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
  return `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${sorted.at(-1)} ms`;
}
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const envelope = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; at: string };
    if (!seen.has(envelope.id)) {
      seen.add(envelope.id);
      latencies.push(Date.now() - Date.parse(envelope.at));
      if (seen.size === expected) resolveAll();
    }
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const db = await scratchDatabase();
try {
  const service = await startServe({
    SVC_DATABASE_URL: db.url,
    SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32',
  });
  const database = createDatabase(db.url, { max: 4 });
  const workspace = await createWorkspace(database.db, { name: 'Bench' });
  const user = await createAccount(database.db, workspace.id, {
    email: 'b@example.com',
    name: 'B',
    password: null,
    role: 'admin',
  });
  await database.db.insert(webhooks).values({
    workspaceId: workspace.id,
    url,
    events: ['task.created'],
    secret: 'bench-secret',
    createdBy: user.id,
  });
  const record = (i: number) =>
    database.db.transaction((tx) =>
      recordEvent(tx as never, {
        workspaceId: workspace.id,
        name: 'task.created',
        subjectId: randomUUID(),
        audienceUserId: user.id,
        data: { i },
      }),
    );
  const allDelivered = deliveriesOf(EVENTS);
  const started = Date.now();
  // Writers in parallel, each event in its own transaction, as mutations record them.
  await Promise.all(
    Array.from({ length: 4 }, async (_, writer) => {
      for (let i = writer; i < EVENTS; i += 4) {
        await record(i);
      }
    }),
  );
  const recorded = Date.now();
  await allDelivered;
  const done = Date.now();
  console.log(
    `${EVENTS} events recorded in ${((recorded - started) / 1000).toFixed(1)} s (${Math.round(EVENTS / ((recorded - started) / 1000))}/s, 4 writers)`,
  );
  console.log(
    `all delivered ${((done - started) / 1000).toFixed(1)} s after the first: ${Math.round(EVENTS / ((done - started) / 1000))} deliveries/s`,
  );
  console.log(`event-to-delivery latency under that load: ${percentiles()}`);

  const pacedDelivered = deliveriesOf(PACED);
  for (let i = 0; i < PACED; i += 1) {
    await record(EVENTS + i);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await pacedDelivered;
  console.log(`event-to-delivery latency, ${PACED} events one every 20 ms: ${percentiles()}`);
  await database.close();
  await service.stop();
} finally {
  receiver.close();
  await db.drop();
}
