// npm run bench:webhooks: webhook deliveries to a local receiver by BENCH_PROCESSES (2)
// `svc serve` processes sharing one database, in three phases:
//  1. a burst: BENCH_EVENTS (10,000) events written by four writers at once, each in its
//     own transaction as writes record them (so each enqueues its delivery there); the
//     record rate, the delivery rate (events over the time from the first write to the
//     last delivery), how long the last delivery trails the last write, and event-to-
//     delivery latency (receiver arrival minus the event's `at`) during the burst;
//  2. after the burst: BENCH_PACED (200) events written one every 20 ms, as an app's
//     ordinary traffic would, and their latency;
//  3. a backlog: BENCH_EVENTS events recorded while no process runs, then the processes
//     start: deliveries per second from the first arrival to the last (the sender's own
//     pace, with no writer competing for the two cores).
// Every arrival is counted by the envelope's id: `duplicates` is arrivals beyond one per
// event, across every process, and must be 0 (webhook_deliveries rows all `delivered`).
// BENCH_SVC_ROOT=<another checkout> runs the same phases against that checkout's `svc
// serve` first (a fresh database each), and prints the two side by side. CPU is counted
// per delivery twice: the `svc serve` process trees', and that of the PostgreSQL backends
// serving them (application_name `svc`; the bench's own writers are `bench`).
// The writers record through the measured checkout's own recordEvent.
// BENCH_CPU_PROF=<dir> has every `svc serve` write a V8 CPU profile there when it stops.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { createDatabase, Database } from '../../src/db/client.js';
import type { recordEvent } from '../../src/events/service.js';
import type { createAccount } from '../../src/users/service.js';
import type { webhooks } from '../../src/webhooks/tables.js';
import type { createWorkspace } from '../../src/workspaces/service.js';
import { cpuMicros, root, scratchDatabase, startServe, type RunningService } from './support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const PACED = Number(process.env.BENCH_PACED ?? 200);
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 2);
const WRITERS = 4;

let latencies: number[] = [];
let expected = 0;
let resolveAll: () => void = () => {};
let lastArrival = 0;
let firstArrival = 0;
let arrivals = 0;
const seen = new Set<string>();
/** Resolves once `count` more distinct events have arrived. */
function deliveriesOf(count: number): Promise<void> {
  latencies = [];
  firstArrival = 0;
  expected = seen.size + count;
  return new Promise<void>((resolve) => (resolveAll = resolve));
}
function percentile(q: number): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN;
}
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const envelope = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; at: string };
    arrivals += 1;
    if (!seen.has(envelope.id)) {
      seen.add(envelope.id);
      const now = Date.now();
      if (firstArrival === 0) firstArrival = now;
      lastArrival = now;
      latencies.push(now - Date.parse(envelope.at));
      if (seen.size === expected) resolveAll();
    }
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

/** CPU time of a process and its descendants (`svc` re-runs itself under its own Node.js). */
function treeCpuMicros(pid: number): number {
  let total = 0;
  try {
    total += cpuMicros(pid);
    for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ')) {
      if (task.trim()) total += treeCpuMicros(Number(task));
    }
  } catch {
    // gone
  }
  return total;
}

/** CPU time of the PostgreSQL backends serving `svc` on the bench's database. */
async function backendCpuMicros(database: Database): Promise<number> {
  const rows = await database.sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and application_name = 'svc'`;
  let total = 0;
  for (const { pid } of rows) {
    try {
      total += cpuMicros(pid);
    } catch {
      // gone
    }
  }
  return total;
}

interface Figures {
  recordedPerSecond: number;
  burstDeliveredPerSecond: number;
  trailMs: number;
  burstP50: number;
  burstP99: number;
  burstMax: number;
  cpuMicrosPerDelivery: number;
  pgCpuMicrosPerDelivery: number;
  pacedP50: number;
  pacedP99: number;
  pacedMax: number;
  backlogPerSecond: number;
  backlogCpuMicrosPerDelivery: number;
  backlogPgCpuMicrosPerDelivery: number;
  duplicates: number;
  undelivered: number;
}

/**
 * The modules the writers record through, from the checkout measured: how an event is
 * recorded (its statements, its notices) is that checkout's, as its mutations would.
 */
async function recorder(svcRoot: string) {
  const load = (file: string) => import(pathToFileURL(path.join(svcRoot, file)).href);
  const [client, events, users, workspaces, tables] = await Promise.all([
    load('src/db/client.ts'),
    load('src/events/service.ts'),
    load('src/users/service.ts'),
    load('src/workspaces/service.ts'),
    load('src/webhooks/tables.ts'),
  ]);
  return {
    createDatabase: client.createDatabase as typeof createDatabase,
    recordEvent: events.recordEvent as typeof recordEvent,
    createAccount: users.createAccount as typeof createAccount,
    createWorkspace: workspaces.createWorkspace as typeof createWorkspace,
    webhooks: tables.webhooks as typeof webhooks,
  };
}

async function measure(svcRoot: string): Promise<Figures> {
  const { createDatabase, recordEvent, createAccount, createWorkspace, webhooks } =
    await recorder(svcRoot);
  const db = await scratchDatabase();
  let services: RunningService[] = [];
  let database: Database | null = null;
  const profiles = process.env.BENCH_CPU_PROF;
  const env = {
    SVC_DATABASE_URL: db.url,
    SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32',
    ...(profiles ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profiles}` } : {}),
  };
  let migrated = false;
  const start = async () => {
    // The first start migrates the fresh database alone; later ones start together.
    const first = migrated ? [] : [await startServe(env, svcRoot)];
    migrated = true;
    const rest = Array.from({ length: PROCESSES - first.length }, () => startServe(env, svcRoot));
    services = [...first, ...(await Promise.all(rest))];
  };
  const stop = async () => {
    await Promise.all(services.map((service) => service.stop()));
    services = [];
  };
  const cpu = () => services.reduce((sum, s) => sum + treeCpuMicros(s.child.pid as number), 0);
  try {
    await start();
    database = createDatabase(db.url, { max: WRITERS, applicationName: 'bench' });
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
    const live = database;
    const record = (i: number) =>
      live.db.transaction((tx) =>
        recordEvent(tx as never, {
          workspaceId: workspace.id,
          name: 'task.created',
          subjectId: randomUUID(),
          audienceUserId: user.id,
          data: { i },
        }),
      );
    const burst = async (from: number) => {
      // Writers in parallel, each event in its own transaction, as mutations record them.
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, writer) => {
          for (let i = writer; i < EVENTS; i += WRITERS) await record(from + i);
        }),
      );
    };
    arrivals = 0;
    seen.clear();

    // 1. The burst, delivered while it is written.
    const burstDelivered = deliveriesOf(EVENTS);
    const cpuBefore = cpu();
    const pgBefore = await backendCpuMicros(live);
    const started = Date.now();
    await burst(0);
    const recorded = Date.now();
    await burstDelivered;
    const cpuBurst = cpu() - cpuBefore;
    const pgBurst = (await backendCpuMicros(live)) - pgBefore;
    const figures = {
      recordedPerSecond: EVENTS / ((recorded - started) / 1000),
      burstDeliveredPerSecond: EVENTS / ((lastArrival - started) / 1000),
      trailMs: lastArrival - recorded,
      burstP50: percentile(0.5),
      burstP99: percentile(0.99),
      burstMax: percentile(1),
      cpuMicrosPerDelivery: cpuBurst / EVENTS,
      pgCpuMicrosPerDelivery: pgBurst / EVENTS,
    };

    // 2. Ordinary traffic after it.
    const pacedDelivered = deliveriesOf(PACED);
    for (let i = 0; i < PACED; i += 1) {
      await record(EVENTS + i);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await pacedDelivered;
    const paced = {
      pacedP50: percentile(0.5),
      pacedP99: percentile(0.99),
      pacedMax: percentile(1),
    };

    // 3. A backlog waiting for the processes to start.
    await stop();
    await burst(EVENTS + PACED);
    const backlogDelivered = deliveriesOf(EVENTS);
    await start();
    const backlogCpuBefore = cpu();
    const backlogPgBefore = await backendCpuMicros(live);
    await backlogDelivered;
    const backlogCpu = cpu() - backlogCpuBefore;
    const backlogPg = (await backendCpuMicros(live)) - backlogPgBefore;
    const backlogPerSecond = (EVENTS - 1) / ((lastArrival - firstArrival) / 1000);
    await stop();
    const [left] = await live.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where status <> 'delivered'`;
    return {
      ...figures,
      ...paced,
      backlogPerSecond,
      backlogCpuMicrosPerDelivery: backlogCpu / EVENTS,
      backlogPgCpuMicrosPerDelivery: backlogPg / EVENTS,
      duplicates: arrivals - seen.size,
      undelivered: left?.n ?? -1,
    };
  } finally {
    await stop();
    await database?.close();
    await db.drop();
  }
}

const columns: [string, string][] = [];
const baseRoot = process.env.BENCH_SVC_ROOT;
if (baseRoot) columns.push([`before (${baseRoot})`, baseRoot]);
columns.push([baseRoot ? 'after (this checkout)' : 'this checkout', root]);
const results: Figures[] = [];
try {
  for (const [, svcRoot] of columns) results.push(await measure(svcRoot));
} finally {
  receiver.close();
}

const rows: [string, (f: Figures) => string][] = [
  ['burst recorded', (f) => `${Math.round(f.recordedPerSecond)}/s`],
  [
    'burst delivered (first write → last delivery)',
    (f) => `${Math.round(f.burstDeliveredPerSecond)}/s`,
  ],
  ['last delivery after the last write', (f) => `${f.trailMs} ms`],
  [
    'latency during the burst, p50 / p99 / max',
    (f) => `${f.burstP50} / ${f.burstP99} / ${f.burstMax} ms`,
  ],
  ['svc CPU per delivery, burst', (f) => `${Math.round(f.cpuMicrosPerDelivery)} µs`],
  ['its PostgreSQL backends, burst', (f) => `${Math.round(f.pgCpuMicrosPerDelivery)} µs`],
  [
    `latency after it (${PACED} at 50/s), p50 / p99 / max`,
    (f) => `${f.pacedP50} / ${f.pacedP99} / ${f.pacedMax} ms`,
  ],
  ['backlog delivered (first → last arrival)', (f) => `${Math.round(f.backlogPerSecond)}/s`],
  ['svc CPU per delivery, backlog', (f) => `${Math.round(f.backlogCpuMicrosPerDelivery)} µs`],
  ['its PostgreSQL backends, backlog', (f) => `${Math.round(f.backlogPgCpuMicrosPerDelivery)} µs`],
  ['duplicates / not delivered', (f) => `${f.duplicates} / ${f.undelivered}`],
];
console.log(
  `${EVENTS} events, ${WRITERS} writers, ${PROCESSES} svc serve processes, one webhook, local receiver`,
);
const width = Math.max(...rows.map(([label]) => label.length));
console.log([''.padEnd(width), ...columns.map(([name]) => name)].join(' | '));
for (const [label, show] of rows) {
  console.log([label.padEnd(width), ...results.map((f) => show(f))].join(' | '));
}
