// npm run bench:fairness: one caller against everyone else (SPEC 8.1, docs/limits.md).
// Workspace A holds BENCH_CONTACTS contacts (default 1,000,000, seeded as bench:scale
// seeds them); workspace B has one member. Both use one `svc serve`, started from
// BENCH_SVC_ROOT (default this checkout; another checkout measures an older commit).
// B's `{ me { id } }` is timed one request after another:
//  a. idle, for 5 s: the baseline every other figure is a ratio to;
//  b. while A's one operation of 2,400 aliased searches with counts is in flight (the
//     alias bomb): its status, first error and time to answer; then how many of its
//     searches and counts still run in PostgreSQL after that answer, and for how long;
//  c. while A keeps SVC_GRAPH_OPERATIONS_PER_USER (20) operations of two searches with
//     counts in flight for BENCH_SECONDS (10): A's completed operations per second too.
// Every phase gets a freshly started service, and statements an earlier phase left running
// are ended first, so one phase's leftovers never weigh on the next. Client timeouts are
// bounded (120 s), so the bench ends even against a service that lets one caller stall it.
// BENCH_KEEP=1 keeps the database.
import path from 'node:path';
import postgres from 'postgres';
import { buildCatalogue } from '../../src/auth/access.js';
import { createApiToken } from '../../src/auth/tokens.js';
import { createDatabase } from '../../src/db/client.js';
import { createAccount } from '../../src/users/service.js';
import { createWorkspace } from '../../src/workspaces/service.js';
import { migrate, seed } from './scale-data.js';
import { root, scratchDatabase, startServe, type RunningService } from './support.js';

/** The scale of docs/performance.md: seeding it takes 90-105 s on two cores. */
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const svcRoot = path.resolve(process.env.BENCH_SVC_ROOT ?? root);

const IDLE_MS = 5_000;
/** Longer than the service's operation deadline (60 s): the service answers first. */
const CLIENT_TIMEOUT_MS = 120_000;
/** How long statements left after the bomb's answer are watched, and how often. */
const LEFTOVER_WATCH_MS = 60_000;
const LEFTOVER_POLL_MS = 100;
/** SVC_GRAPH_OPERATIONS_PER_USER: A's operations in flight at once in phase c. */
const A_OPERATIONS = 20;
/** Lets A's operations take their slots before B's first request in phase c. */
const HEAD_START_MS = 1_000;

const ME = '{ me { id } }';
const SEARCH_WITH_TOTAL = (q: string) => `contactPage(q: "${q}", limit: 1) { total }`;
const BOMB = `{ ${Array.from({ length: 2400 }, (_, i) => `a${i}: ${SEARCH_WITH_TOTAL('a')}`).join(' ')} }`;
/** Two searches with their counts: the most one operation may carry since the fix. */
const SATURATING = `{ a: ${SEARCH_WITH_TOTAL('a')} b: ${SEARCH_WITH_TOTAL('e')} }`;

// ---------------------------------------------------------------------------- requests

interface Answer {
  /** HTTP status, or how the request failed on the client's side. */
  status: number | 'timeout' | 'failed';
  ms: number;
  firstError?: string;
}

const answeredOk = (a: Answer) => a.status === 200 && a.firstError === undefined;

async function graph(url: string, token: string, query: string): Promise<Answer> {
  const started = performance.now();
  try {
    const response = await fetch(`${url}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query }),
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    });
    const body = (await response.json()) as { errors?: { message: string }[] };
    const firstError = body.errors?.[0]?.message;
    return { status: response.status, ms: performance.now() - started, firstError };
  } catch (error) {
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    return {
      status: timedOut ? 'timeout' : 'failed',
      ms: performance.now() - started,
      firstError: String(error),
    };
  }
}

/** B's `me`, one after another, at least once and then for as long as `going()`. */
async function meWhile(url: string, token: string, going: () => boolean): Promise<Answer[]> {
  const answers: Answer[] = [];
  do answers.push(await graph(url, token, ME));
  while (going());
  return answers;
}

// ---------------------------------------------------------------------------- figures

interface Latency {
  p50: number;
  p99: number;
  max: number;
  /** Answered 200 without errors, of `count`. */
  ok: number;
  /** Not answered within the client's timeout (their time is the timeout). */
  timedOut: number;
  count: number;
}

/** Nearest-rank percentiles of every answer's time, whatever it answered. */
function latency(answers: Answer[]): Latency {
  const ms = answers.map((a) => a.ms).sort((x, y) => x - y);
  const rank = (p: number) => ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)] ?? NaN;
  return {
    p50: rank(0.5),
    p99: rank(0.99),
    max: ms.at(-1) ?? NaN,
    ok: answers.filter(answeredOk).length,
    timedOut: answers.filter((a) => a.status === 'timeout').length,
    count: answers.length,
  };
}

/** How a set of requests ended: `4 × 200, 16 × 429 (operation ran past its deadline…)`. */
function outcomes(answers: Answer[]): string {
  const counts = new Map<string, number>();
  for (const a of answers) {
    const key = answeredOk(a) ? '200' : `${a.status} (${a.firstError ?? 'no error'})`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([key, n]) => `${n} × ${key}`).join(', ');
}

function fmt(ms: number): string {
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`;
}
const times = (ms: number, idle: number) => `×${(ms / idle).toFixed(ms / idle >= 10 ? 0 : 1)}`;

function latencyRow(name: string, l: Latency, idle: Latency): string {
  const figures = `${fmt(l.p50)} / ${fmt(l.p99)} / ${fmt(l.max)}`;
  const ratios = `${times(l.p50, idle.p50)} / ${times(l.p99, idle.p99)} / ${times(l.max, idle.max)}`;
  const answered = `${l.ok} of ${l.count}${l.timedOut ? `, ${l.timedOut} timed out` : ''}`;
  return `| ${name.padEnd(34)} | ${figures.padStart(30)} | ${ratios.padStart(24)} | ${answered.padStart(22)} |`;
}

// ---------------------------------------------------------------------------- setup

interface Tokens {
  /** User 0 of the seeded workspace, its admin. */
  a: string;
  /** The one member of another workspace. */
  b: string;
}

async function mintTokens(url: string, workspaceA: string, userA: string): Promise<Tokens> {
  const database = createDatabase(url, { max: 1 });
  try {
    const catalogue = buildCatalogue([]);
    const token = async (workspaceId: string, userId: string) =>
      (
        await createApiToken(database.db, catalogue, {
          workspaceId,
          userId,
          name: 'fairness bench',
          scopes: null,
          ttlDays: null,
        })
      ).secret;
    const other = await createWorkspace(database.db, { name: 'Other' });
    const member = await createAccount(database.db, other.id, {
      email: 'other@example.com',
      name: 'Other member',
      password: 'bench password that is long enough',
      role: 'member',
    });
    return { a: await token(workspaceA, userA), b: await token(other.id, member.id) };
  } finally {
    await database.close();
  }
}

/**
 * The service's statements reading contacts that run in PostgreSQL: A's searches and
 * counts, not B's `me` (which may still be in flight when the bomb is answered).
 */
async function runningSearches(admin: postgres.Sql, database: string): Promise<number> {
  const [row] = await admin<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = ${database} and application_name = 'svc' and state = 'active'
      and query like '%contact%'`;
  return row?.n ?? 0;
}

/** Ends whatever the service left running (a stopped client does not stop a statement). */
async function endLeftovers(admin: postgres.Sql, database: string): Promise<void> {
  for (;;) {
    const [row] = await admin<{ n: number }[]>`
      select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
      where datname = ${database} and application_name = 'svc'`;
    if (row?.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Runs `measure` on a freshly started service, then stops it and ends its leftovers. */
async function onFreshService<T>(
  db: { name: string; url: string },
  admin: postgres.Sql,
  tokens: Tokens,
  measure: (service: RunningService) => Promise<T>,
): Promise<T> {
  await endLeftovers(admin, db.name);
  const service = await startServe({ SVC_DATABASE_URL: db.url }, svcRoot);
  try {
    // Warm: the credential read and `me` prepared, B's connection to the service open.
    for (let i = 0; i < 20; i += 1) await graph(service.url, tokens.b, ME);
    return await measure(service);
  } finally {
    await service.stop();
    await endLeftovers(admin, db.name);
  }
}

// ---------------------------------------------------------------------------- phases

async function idle(service: RunningService, tokens: Tokens): Promise<Latency> {
  const until = performance.now() + IDLE_MS;
  return latency(await meWhile(service.url, tokens.b, () => performance.now() < until));
}

interface BombResult {
  answer: Answer;
  me: Latency;
  /** The service's searches and counts running at the bomb's answer. */
  runningAtAnswer: number;
  /** From the answer until none ran, or null if some still ran when the watch ended. */
  ranOnMs: number | null;
  /** Running when the watch ended (0 unless ranOnMs is null). */
  runningAtEnd: number;
}

/** Polls the searches still running after an answer until none are left. */
async function watchLeftovers(admin: postgres.Sql, database: string) {
  const answered = performance.now();
  const runningAtAnswer = await runningSearches(admin, database);
  let running = runningAtAnswer;
  while (running > 0 && performance.now() - answered < LEFTOVER_WATCH_MS) {
    await new Promise((resolve) => setTimeout(resolve, LEFTOVER_POLL_MS));
    running = await runningSearches(admin, database);
  }
  const ranOnMs = running === 0 ? performance.now() - answered : null;
  return { runningAtAnswer, ranOnMs, runningAtEnd: running };
}

async function aliasBomb(
  service: RunningService,
  tokens: Tokens,
  admin: postgres.Sql,
  database: string,
): Promise<BombResult> {
  let inFlight = true;
  const bomb = graph(service.url, tokens.a, BOMB).finally(() => (inFlight = false));
  const me = meWhile(service.url, tokens.b, () => inFlight);
  const answer = await bomb;
  const leftovers = await watchLeftovers(admin, database);
  return { answer, me: latency(await me), ...leftovers };
}

interface SaturationResult {
  me: Latency;
  /** A's operations answered 200 without errors, per second of the phase. */
  aPerSecond: number;
  /** How A's operations ended (`outcomes`). */
  aOutcomes: string;
  /** From the first of A's operations to the last one's answer, in-flight ones included. */
  elapsedMs: number;
}

async function saturate(service: RunningService, tokens: Tokens): Promise<SaturationResult> {
  const started = performance.now();
  const until = started + SECONDS * 1000;
  const operations: Answer[] = [];
  const loop = async () => {
    while (performance.now() < until)
      operations.push(await graph(service.url, tokens.a, SATURATING));
  };
  const loopsDone = Promise.all(Array.from({ length: A_OPERATIONS }, loop)).then(() =>
    performance.now(),
  );
  await new Promise((resolve) => setTimeout(resolve, HEAD_START_MS));
  const me = await meWhile(service.url, tokens.b, () => performance.now() < until);
  // A's time is its own: B's last request may be answered long after A's last.
  const elapsedMs = (await loopsDone) - started;
  const aOk = operations.filter(answeredOk).length;
  return {
    me: latency(me),
    aPerSecond: aOk / (elapsedMs / 1000),
    aOutcomes: outcomes(operations),
    elapsedMs,
  };
}

// ---------------------------------------------------------------------------- run

function printResults(idleMe: Latency, bomb: BombResult, busy: SaturationResult): void {
  const { answer } = bomb;
  const leftover =
    bomb.runningAtAnswer === 0
      ? 'none at the answer'
      : bomb.ranOnMs === null
        ? `${bomb.runningAtAnswer} at the answer, ${bomb.runningAtEnd} still after ${LEFTOVER_WATCH_MS / 1000} s`
        : `${bomb.runningAtAnswer} at the answer, none ${fmt(bomb.ranOnMs)} after it`;
  console.log(`
svc: ${svcRoot}; ${CONTACTS} contacts in A

alias bomb: ${answer.status} in ${fmt(answer.ms)}: ${answer.firstError ?? '(no error)'}
  searches still running: ${leftover}
A saturating (${A_OPERATIONS} at once, ${SECONDS} s): ${busy.aPerSecond.toFixed(2)} operations/s answered 200 (over ${fmt(busy.elapsedMs)}, the last in flight included)
  A's operations: ${busy.aOutcomes}

| B's { me { id } }                  |   p50 / p99 / max              |    ratio to idle         |       answered 200     |
| ---------------------------------- | -----------------------------: | -----------------------: | ---------------------: |
${latencyRow('idle', idleMe, idleMe)}
${latencyRow('during the alias bomb', bomb.me, idleMe)}
${latencyRow('during A saturating', busy.me, idleMe)}`);
}

const db = await scratchDatabase();
const admin = postgres(db.url, { max: 1, onnotice: () => {} });
try {
  const started = performance.now();
  migrate(db.url, svcRoot);
  const { workspaceId, userIds } = await seed(db.url, { contacts: CONTACTS });
  console.log(`migrate and seed: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const tokens = await mintTokens(db.url, workspaceId, userIds[0] as string);
  // The load's dirty pages written now, not by the checkpointer during the idle baseline.
  await admin`checkpoint`;

  const idleMe = await onFreshService(db, admin, tokens, (s) => idle(s, tokens));
  console.log(`a. idle: done`);
  const bomb = await onFreshService(db, admin, tokens, (s) => aliasBomb(s, tokens, admin, db.name));
  console.log(`b. alias bomb: done`);
  const busy = await onFreshService(db, admin, tokens, (s) => saturate(s, tokens));
  console.log(`c. saturating: done`);
  printResults(idleMe, bomb, busy);
} finally {
  await admin.end();
  if (process.env.BENCH_KEEP) console.log(`kept database ${db.name}`);
  else await db.drop();
}
