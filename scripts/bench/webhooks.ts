// npm run bench:webhooks: deliveries per second to a local receiver for 10,000 events
// (BENCH_EVENTS), and event-to-delivery latency (receiver arrival minus the event's `at`).
// The events are recorded the way writes record them (recordEvent in a transaction), so
// each one enqueues its delivery in that transaction.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase } from '../../src/db/client.js';
import { recordEvent } from '../../src/events/service.js';
import { createAccount } from '../../src/users/service.js';
import { createWorkspace } from '../../src/workspaces/service.js';
import { webhooks } from '../../src/webhooks/tables.js';
import { scratchDatabase, startServe } from './support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);

const latencies: number[] = [];
let resolveAll: () => void;
const allDelivered = new Promise<void>((resolve) => (resolveAll = resolve));
const seen = new Set<string>();
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const envelope = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; at: string };
    if (!seen.has(envelope.id)) {
      seen.add(envelope.id);
      latencies.push(Date.now() - Date.parse(envelope.at));
      if (seen.size === EVENTS) resolveAll();
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
  const started = Date.now();
  // Writers in parallel, each event in its own transaction, as mutations record them.
  await Promise.all(
    Array.from({ length: 4 }, async (_, writer) => {
      for (let i = writer; i < EVENTS; i += 4) {
        await database.db.transaction((tx) =>
          recordEvent(tx as never, {
            workspaceId: workspace.id,
            name: 'task.created',
            audienceUserId: user.id,
            data: { i },
          }),
        );
      }
    }),
  );
  const recorded = Date.now();
  await allDelivered;
  const done = Date.now();
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))];
  console.log(
    `${EVENTS} events recorded in ${((recorded - started) / 1000).toFixed(1)} s (${Math.round(EVENTS / ((recorded - started) / 1000))}/s, 4 writers)`,
  );
  console.log(
    `all delivered ${((done - started) / 1000).toFixed(1)} s after the first: ${Math.round(EVENTS / ((done - started) / 1000))} deliveries/s`,
  );
  console.log(
    `event-to-delivery latency: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${latencies.at(-1)} ms`,
  );
  await database.close();
  await service.stop();
} finally {
  receiver.close();
  await db.drop();
}
