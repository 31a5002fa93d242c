// npm run bench:scale: the read paths of the graph at scale, each against the same SQL
// served as JSON by a bare node:http handler with postgres.js in the same run.
//  - seeds a scratch database with COPY: one workspace, 50 users, BENCH_CONTACTS contacts
//    (default 1,000,000) with an email and a phone each, and as many tasks over the users;
//    the secondary indexes are dropped for the load and rebuilt from their own definitions;
//  - measures requests/s and p50/p99 at fixed concurrency for `contactPage` (unfiltered,
//    by name fragment, by digits), `contacts` by cursor (first page, far in), `tasks(date:)`
//    and `contact(id)` with identities and tasks, `contactDuplicates(id)` of a contact whose
//    name two others share, and the CPU time per request of each serving process (less
//    moved by the shared machine than requests a second);
//  - `contactDuplicates` also one request at a time over 200 contacts (p50/p99 of each
//    side alone) and its plan; BENCH_STALE=1 explains it with the statistics of contacts
//    and contact_identities removed (in a transaction rolled back), as after a bulk load;
//  - prints EXPLAIN (ANALYZE, BUFFERS) of the search and first-page statements and the
//    peak RSS (VmHWM) of the `svc serve` process.
// The baseline runs in its own process (scale-baseline.ts), as the service and the load
// generator do, and the two alternate over BENCH_ROUNDS rounds (2).
// BENCH_CONTACTS, BENCH_SECONDS (10), BENCH_CONNECTIONS (16, below
// SVC_GRAPH_OPERATIONS_PER_USER), BENCH_KEEP=1 keeps the database, BENCH_DATABASE names a
// database kept earlier (no seeding), BENCH_ONLY picks scenarios, BENCH_REPLICA_URLS gives
// the service read replicas (docs/scaling.md), BENCH_SVC_ROOT serves another checkout
// (`git archive <commit> | tar -x -C dir`, node_modules linked), and BENCH_BEFORE_ROOT adds
// one as a column of the same run (before and after together). BENCH_POSTGRAPHILE_ROOT (a
// directory where postgraphile@5 is installed) adds PostGraphile as a column
// (postgraphile-peer.mjs, its own process) for the scenarios it has a document for.
// BENCH_WARM_SECONDS (5) of each scenario's load warm every server before the rounds.
// BENCH_NODE_OPTIONS is `svc serve`'s NODE_OPTIONS (`--cpu-prof`, `--inspect`; support.ts) and
// BENCH_BASELINE_NODE_ARGS the floor's and the peer's Node flags (`--cpu-prof --cpu-prof-dir=…`).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { buildCatalogue } from '../../src/auth/access.js';
import { createApiToken } from '../../src/auth/tokens.js';
import { createDatabase, withDatabaseName } from '../../src/db/client.js';
import { encodeCursor } from '../../src/paging/index.js';
import { selectDuplicates } from '../../src/contacts/queries.js';
import { containing } from './scale-baseline.js';
import { migrate, seed, type Seeded } from './scale-data.js';
import {
  adminUrl,
  load,
  report,
  root,
  scratchDatabase,
  startServe,
  type LoadResult,
} from './support.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const TASKS = Number(process.env.BENCH_TASKS ?? CONTACTS);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** BENCH_ONLY=tasks,version runs the scenarios whose names contain one of the words. */
const only = process.env.BENCH_ONLY?.split(',').filter(Boolean);

/**
 * The Node.js `svc serve` runs under (the `node` dependency, bin/svc.js), so the floor and
 * the peer run on the same runtime as the service; this one when it is not installed.
 */
const servingNode = ((): string => {
  const installed = path.join(root, 'node_modules/node/bin/node');
  return existsSync(installed) ? installed : process.execPath;
})();

/**
 * The floor (scale-baseline.ts) in a process of its own, as the service runs in one:
 * sharing the load generator's event loop flattered the service.
 */
async function spawnBaseline(
  databaseUrl: string,
  script = 'scripts/bench/scale-baseline.ts',
): Promise<{ url: string; pid: number; close(): Promise<void> }> {
  // BENCH_BASELINE_NODE_ARGS: Node flags for the floor and the peer (`--cpu-prof`, which
  // NODE_OPTIONS refuses), so the two can be profiled as the service is.
  const flags = process.env.BENCH_BASELINE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(servingNode, [...flags, '--import', 'tsx', path.join(root, script)], {
    cwd: root,
    env: { ...process.env, BENCH_DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) {
    const url = /^listening (\S+)$/.exec(line)?.[1];
    if (url) {
      return {
        url,
        pid: child.pid as number,
        close: () =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      };
    }
  }
  throw new Error(`${script} exited with ${child.exitCode}`);
}

type PeerQueries = Record<
  string,
  (variables: Record<string, string>) => { query: string; variables: Record<string, unknown> }
>;
/** postgraphile-peer.mjs's documents, when BENCH_POSTGRAPHILE_ROOT names an install. */
const peerQueries: PeerQueries | null = process.env.BENCH_POSTGRAPHILE_ROOT
  ? (
      (await import(
        pathToFileURL(path.join(root, 'scripts/bench/postgraphile-peer.mjs')).href
      )) as {
        POSTGRAPHILE_QUERIES: PeerQueries;
      }
    ).POSTGRAPHILE_QUERIES
  : null;
/** The peer's body for a scenario: unfiltered first pages, tasks, contact, version. */
function peerBody(s: { field: string; variables: Record<string, string> }): string | null {
  const make = peerQueries?.[s.field];
  if (!make || s.variables.q || s.variables.after) return null;
  return JSON.stringify(make(s.variables));
}

/**
 * Defining and archiving a custom field on the seeded workspace, one at a time: each
 * writes one definition row whatever the number of contacts (no rewrite, no backfill).
 */
async function definitionTimes(graph: string, headers: Record<string, string>) {
  const post = async (query: string, variables: Record<string, unknown>) => {
    const started = performance.now();
    const response = await fetch(graph, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { data?: Record<string, { id: string }> };
    return { ms: performance.now() - started, id: Object.values(body.data ?? {})[0]?.id };
  };
  const median = (times: number[]) => times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
  const defined: number[] = [];
  const archived: number[] = [];
  for (let i = 0; i < 20; i += 1) {
    const input = { name: `benchField${i}`, label: `Bench ${i}`, kind: 'text' };
    const made = await post(
      'mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }',
      { input },
    );
    defined.push(made.ms);
    const gone = await post('mutation ($id: UUID!) { archiveField(id: $id) { id } }', {
      id: made.id,
    });
    archived.push(gone.ms);
  }
  console.log(
    `custom fields on ${CONTACTS} contacts, one at a time: defineField median ${median(defined).toFixed(1)} ms, archiveField median ${median(archived).toFixed(1)} ms`,
  );
}

// ---------------------------------------------------------------------------- run

const CONTACT_FIELDS = 'id name identities { channel identifier }';
const queries = {
  contactPage: `query ($q: String) { contactPage(q: $q) { total items { ${CONTACT_FIELDS} } } }`,
  contacts: `query ($after: String) { contacts(after: $after) { edges { cursor node { ${CONTACT_FIELDS} } } pageInfo { hasNextPage endCursor } } }`,
  tasks: `query ($date: Date!) { tasks(date: $date) { edges { cursor node { id title dueOn status } } pageInfo { hasNextPage endCursor } } }`,
  tasksWithContact: `query ($date: Date!) { tasks(date: $date) { edges { cursor node { id title dueOn status contact { name } } } pageInfo { hasNextPage endCursor } } }`,
  contact: `query ($id: UUID!) { contact(id: $id) { ${CONTACT_FIELDS} tasks { id title dueOn status } } }`,
  version: '{ version }',
  contactDuplicates: `query ($id: UUID!) { contactDuplicates(id: $id) { score nameSimilarity contact { id name } } }`,
};

type Sql = postgres.Sql;

interface Scenario {
  name: string;
  field: keyof typeof queries;
  variables: Record<string, string>;
}

async function explain(sql: Sql, title: string, text: string, params: unknown[]) {
  const rows = await sql.unsafe<{ 'QUERY PLAN': string }[]>(
    `explain (analyze, buffers) ${text}`,
    params as postgres.ParameterOrJSON<never>[],
  );
  console.log(`\n-- ${title}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
}

/**
 * The page statements of `contactPage`, as the service words them: a search's page sorts
 * and counts its matches in contact_search and reads only its contacts (src/contacts/queries.ts).
 */
async function plans(url: string, workspaceId: string, searches: string[]) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await explain(
      sql,
      'contactPage first page, unfiltered',
      `select "workspace_id", "id", "name", "created_at", "updated_at" from "contacts"
       where "contacts"."workspace_id" = $1
       order by lower("contacts"."name") asc, "contacts"."id" asc limit 50`,
      [workspaceId],
    );
    for (const q of searches) {
      const digits = q.replace(/\D/g, '');
      const params = [workspaceId, containing(q.toLowerCase())];
      if (digits.length >= 3) params.push(containing(digits));
      await explain(
        sql,
        `contactPage q=${q}: page and count`,
        `select c."workspace_id", c."id", c."name", c."created_at", c."updated_at", m.total
         from (select "contact_id", "sort_name", (count(*) over ())::int as total
           from "contact_search" where "workspace_id" = $1
             and ("sort_name" like $2 or "names" like $2${digits.length >= 3 ? ' or "digits" like $3' : ''})
           order by "sort_name", "contact_id" limit 50) m
         join "contacts" c on c."workspace_id" = $1 and c."id" = m."contact_id"
         order by m."sort_name", m."contact_id"`,
        params,
      );
    }
  } finally {
    await sql.end();
  }
}

/**
 * contactDuplicates's statement as the service runs it (src/contacts/queries.ts), explained
 * with the statistics the database holds: `BENCH_STALE=1` runs it, in a transaction rolled
 * back, with every statistic of contacts and contact_identities removed, as a bulk load
 * leaves them where autovacuum is off.
 */
async function duplicatesPlan(url: string, workspaceId: string, id: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    let text = '';
    let params: unknown[] = [];
    const logged = drizzle(sql, {
      casing: 'snake_case',
      logger: { logQuery: (query, values) => void ((text = query), (params = values)) },
    });
    await selectDuplicates(logged, workspaceId, id, 10);
    const stale = Boolean(process.env.BENCH_STALE);
    await sql
      .begin(async (tx) => {
        if (stale) {
          await tx`delete from pg_statistic where starelid in (
            select oid from pg_class where relname in ('contacts', 'contact_identities')
            union select indexrelid from pg_index
            where indrelid in ('contacts'::regclass, 'contact_identities'::regclass))`;
        }
        await explain(
          tx as unknown as Sql,
          `contactDuplicates(id), ${stale ? 'no statistics' : 'statistics as they are'}`,
          text,
          params,
        );
        throw new Rollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof Rollback)) throw error;
      });
  } finally {
    await sql.end();
  }
}

class Rollback extends Error {}

/**
 * Each body POSTed once, one at a time, to the service and then to the baseline: the
 * latency of a single request with nothing else in flight, p50 and p99 of each.
 */
async function oneAtATime(
  title: string,
  bodies: string[],
  to: { service: string; baseline: string; headers: Record<string, string> },
) {
  const time = async (url: string) => {
    const times: number[] = [];
    for (const body of bodies) {
      const started = performance.now();
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...to.headers },
        body,
      });
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      await response.arrayBuffer();
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
    return `p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms`;
  };
  const baseline = await time(to.baseline);
  const service = await time(to.service);
  console.log(`\n${title}: service ${service}; baseline ${baseline}`);
}

function peakRss(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const line = (key: string) =>
    /(\d+) kB/.exec(status.split('\n').find((l) => l.startsWith(key)) ?? '')?.[1];
  const mb = (kb: string | undefined) => `${(Number(kb) / 1024).toFixed(0)} MB`;
  return `VmHWM ${mb(line('VmHWM:'))}, VmRSS ${mb(line('VmRSS:'))}`;
}

/** A database seeded by an earlier run (BENCH_KEEP=1), migrated again and used as it is. */
async function reuse(url: string): Promise<Seeded> {
  migrate(url);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ workspace_id: string; user_id: string; contact_id: string }[]>`
      select w.id as workspace_id, u.id as user_id,
        (select id from contacts c where c.workspace_id = w.id limit 1) as contact_id
      from workspaces w join users u on u.workspace_id = w.id and u.email = 'user0@example.com'
      where w.name = 'Scale'`;
    if (!row) throw new Error(`${url} holds no seeded Scale workspace`);
    return { workspaceId: row.workspace_id, userIds: [row.user_id], contactIds: [row.contact_id] };
  } finally {
    await sql.end();
  }
}

const kept = process.env.BENCH_DATABASE;
const db = kept
  ? { name: kept, url: withDatabaseName(adminUrl, kept), drop: async () => {} }
  : await scratchDatabase();
try {
  const started = performance.now();
  let seeded: Seeded;
  if (kept) seeded = await reuse(db.url);
  else {
    migrate(db.url);
    console.log(`migrate: ${((performance.now() - started) / 1000).toFixed(1)} s`);
    seeded = await seed(db.url, { contacts: CONTACTS, tasks: TASKS });
  }
  const { workspaceId, userIds, contactIds } = seeded;
  const admin = postgres(db.url, { max: 1, onnotice: () => {} });
  const database = createDatabase(db.url, { max: 1 });
  const { secret } = await createApiToken(database.db, buildCatalogue([]), {
    workspaceId,
    userId: userIds[0] as string,
    name: 'scale bench',
    scopes: null,
    ttlDays: null,
  });
  await database.close();

  // A day on which user 0 has open tasks; a contact with open tasks; a cursor far in.
  const [day] = await admin<{ due_on: string }[]>`
    select to_char(due_on, 'YYYY-MM-DD') as due_on from tasks
    where workspace_id = ${workspaceId} and assignee_id = ${userIds[0] as string} and status = 'open'
      and due_on is not null
    group by due_on order by count(*) desc, due_on limit 1`;
  const [withTasks] = await admin<{ contact_id: string }[]>`
    select contact_id from tasks where workspace_id = ${workspaceId} and contact_id is not null
      and status = 'open' limit 1`;
  const [far] = await admin<{ sort_name: string; id: string }[]>`
    select lower(name) as sort_name, id from contacts where workspace_id = ${workspaceId}
    order by lower(name), id offset ${Math.floor(CONTACTS * 0.8)} limit 1`;
  // A contact whose name two others share (the seeded names repeat), for contactDuplicates;
  // and 200 others, the same on every run, for its one-at-a-time latency.
  const [twin] = await admin<{ id: string }[]>`
    select id from contacts where workspace_id = ${workspaceId}
      and lower(name) = (select lower(name) from contacts where workspace_id = ${workspaceId}
        group by 1 having count(*) = 3 order by 1 limit 1)
    order by id limit 1`;
  const twinId = twin?.id;
  const sampled = await admin<{ id: string }[]>`
    select id from contacts where workspace_id = ${workspaceId}
    order by md5(id::text) limit 200`;
  await admin.end();
  const farCursor = encodeCursor('contacts', [far?.sort_name as string, far?.id as string]);
  const contactId = withTasks?.contact_id ?? (contactIds[0] as string);

  const nameFragment = process.env.BENCH_Q_NAME ?? 'kelmor';
  const broadFragment = process.env.BENCH_Q_BROAD ?? 'hann';
  const digitsFragment = process.env.BENCH_Q_DIGITS ?? '4821';
  const every: Scenario[] = [
    { name: 'contactPage first page', field: 'contactPage', variables: {} },
    {
      name: `contactPage q="${nameFragment}"`,
      field: 'contactPage',
      variables: { q: nameFragment },
    },
    {
      name: `contactPage q="${broadFragment}"`,
      field: 'contactPage',
      variables: { q: broadFragment },
    },
    {
      name: `contactPage q="${digitsFragment}"`,
      field: 'contactPage',
      variables: { q: digitsFragment },
    },
    { name: 'contacts first page', field: 'contacts', variables: {} },
    { name: 'contacts after a cursor 80% in', field: 'contacts', variables: { after: farCursor } },
    {
      name: `tasks(date: ${day?.due_on})`,
      field: 'tasks',
      variables: { date: day?.due_on as string },
    },
    {
      name: `tasks(date: ${day?.due_on}) + contact name`,
      field: 'tasksWithContact',
      variables: { date: day?.due_on as string },
    },
    { name: 'contact(id) + identities + tasks', field: 'contact', variables: { id: contactId } },
    { name: '{ version } with a token', field: 'version', variables: {} },
    {
      name: 'contactDuplicates(id)',
      field: 'contactDuplicates',
      variables: { id: twinId ?? contactId },
    },
  ];
  const scenarios = every.filter((s) => !only || only.some((word) => s.name.includes(word)));

  // BENCH_SVC_ROOT: another checkout's service (an earlier commit), against the same floor.
  // BENCH_REPLICA_URLS: the service reads from these replicas (SVC_DATABASE_REPLICA_URLS),
  // once its first read-your-writes window has passed (operation timeout + 5 s + 2 s lag
  // bound, docs/scaling.md), shortened here with the operation timeout.
  const replicas = process.env.BENCH_REPLICA_URLS;
  const service = await startServe(
    {
      SVC_DATABASE_URL: db.url,
      ...(replicas
        ? { SVC_DATABASE_REPLICA_URLS: replicas, SVC_GRAPH_OPERATION_TIMEOUT: '3s' }
        : {}),
    },
    process.env.BENCH_SVC_ROOT,
  );
  if (replicas) await new Promise((resolve) => setTimeout(resolve, 10_500));
  // BENCH_BEFORE_ROOT: an earlier checkout's service as a column of the same run.
  const before = process.env.BENCH_BEFORE_ROOT
    ? await startServe({ SVC_DATABASE_URL: db.url }, process.env.BENCH_BEFORE_ROOT)
    : null;
  const baseline = await spawnBaseline(db.url);
  const peer = peerQueries
    ? await spawnBaseline(db.url, 'scripts/bench/postgraphile-peer.mjs')
    : null;
  const graph = `${service.url}/api/graphql`;
  const headers = { authorization: `Bearer ${secret}` };

  // The service and the floor answer every scenario with the same bytes, before any load.
  for (const s of scenarios) {
    const body = JSON.stringify({ query: queries[s.field], variables: s.variables });
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    };
    const fromService = await (await fetch(graph, init)).text();
    const parsed = JSON.parse(fromService) as { data?: unknown; errors?: unknown };
    if (parsed.errors || !parsed.data) {
      throw new Error(`${s.name}: ${JSON.stringify(parsed.errors)}`);
    }
    const fromBaseline = await (await fetch(`${baseline.url}/${s.field}`, init)).text();
    const fromBefore = before
      ? await (await fetch(`${before.url}/api/graphql`, init)).text()
      : fromService;
    if (fromBaseline !== fromService || fromBefore !== fromService) {
      throw new Error(
        `${s.name}: the floor's answer differs from the service's\n  service: ${fromService.slice(0, 400)}\n  floor:   ${fromBaseline.slice(0, 400)}\n  before:  ${fromBefore.slice(0, 400)}`,
      );
    }
    const size = (data: unknown) => JSON.stringify(data).match(/"id"/g)?.length ?? 0;
    const total = /"total":(\d+)/.exec(fromService)?.[1];
    let fromPeer = '';
    const peerRequest = peerBody(s);
    if (peer && peerRequest) {
      const answer = (await (
        await fetch(`${peer.url}/graphql`, { ...init, body: peerRequest })
      ).json()) as { data?: unknown; errors?: unknown };
      if (answer.errors || !answer.data) {
        throw new Error(`${s.name} (PostGraphile): ${JSON.stringify(answer.errors)}`);
      }
      const peerTotal = /"contacts":"(\d+)"/.exec(JSON.stringify(answer.data))?.[1];
      fromPeer = `; PostGraphile ${size(answer.data)} ids${peerTotal ? `, total ${peerTotal}` : ''}`;
    }
    console.log(
      `${s.name}: ${size(parsed.data)} ids${total ? `, total ${total}` : ''}, ${fromService.length} bytes, the floor's the same${fromPeer}`,
    );
  }

  console.log(
    `\nload: ${connections} connections, ${seconds} s each, ${CONTACTS} contacts, one machine (load generator shares the cores)\n`,
  );
  // Baseline and service alternate, scenario by scenario, over the rounds: drift on this
  // shared machine falls on both, and the spread between rounds is reported.
  const rows: LoadResult[] = [];
  const pairs: Record<string, LoadResult> = {};
  const ratios: Record<string, number[]> = {};
  const peerRatios: Record<string, number[]> = {};
  /** The service's CPU time per request over the baseline's: 2.0 means twice the work. */
  const cpuRatios: Record<string, number[]> = {};
  const beforeRatios: Record<string, number[]> = {};
  const beforePeerRatios: Record<string, number[]> = {};
  /** p99 of the service, the earlier service and PostGraphile, each round. */
  const p99s: Record<string, string[]> = {};
  // Before the rounds, every server takes each scenario's load for BENCH_WARM_SECONDS (5),
  // not counted: a first round would otherwise measure V8 compiling the hot paths, which
  // costs a server with more code (the service, PostGraphile) more than the floor.
  const warmSeconds = Number(process.env.BENCH_WARM_SECONDS ?? 5);
  for (const s of warmSeconds > 0 ? scenarios : []) {
    const body = JSON.stringify({ query: queries[s.field], variables: s.variables });
    const peerRequest = peerBody(s);
    const targets = [
      { url: `${baseline.url}/${s.field}`, body },
      { url: graph, body },
      ...(before ? [{ url: `${before.url}/api/graphql`, body }] : []),
      ...(peer && peerRequest ? [{ url: `${peer.url}/graphql`, body: peerRequest }] : []),
    ];
    for (const target of targets) {
      await load('warm-up', { ...target, headers, connections, seconds: warmSeconds });
    }
  }
  for (let round = 1; round <= ROUNDS; round += 1) {
    console.log(`round ${round} of ${ROUNDS}`);
    for (const s of scenarios) {
      const body = JSON.stringify({ query: queries[s.field], variables: s.variables });
      const base = await load(`  baseline: ${s.name}`, {
        url: `${baseline.url}/${s.field}`,
        body,
        headers,
        connections,
        seconds,
        pid: baseline.pid,
      });
      const svc = await load(`svc: ${s.name}`, {
        url: graph,
        body,
        headers,
        connections,
        seconds,
        pid: service.child.pid as number,
      });
      const earlier = before
        ? await load(`before: ${s.name}`, {
            url: `${before.url}/api/graphql`,
            body,
            headers,
            connections,
            seconds,
            pid: before.child.pid as number,
          })
        : null;
      pairs[svc.name] = base;
      pairs[base.name] = base;
      rows.push(base, svc);
      if (earlier) {
        pairs[earlier.name] = base;
        rows.push(earlier);
        (beforeRatios[s.name] ??= []).push(earlier.requestsPerSecond / base.requestsPerSecond);
      }
      (ratios[s.name] ??= []).push(svc.requestsPerSecond / base.requestsPerSecond);
      (cpuRatios[s.name] ??= []).push(
        (svc.cpuMicrosPerRequest ?? 0) / (base.cpuMicrosPerRequest ?? 1),
      );
      const peerRequest = peerBody(s);
      if (peer && peerRequest) {
        const pgl = await load(`  postgraphile: ${s.name}`, {
          url: `${peer.url}/graphql`,
          body: peerRequest,
          headers,
          connections,
          seconds,
          pid: peer.pid,
        });
        pairs[pgl.name] = base;
        rows.push(pgl);
        (peerRatios[s.name] ??= []).push(svc.requestsPerSecond / pgl.requestsPerSecond);
        if (earlier) {
          (beforePeerRatios[s.name] ??= []).push(earlier.requestsPerSecond / pgl.requestsPerSecond);
        }
        (p99s[s.name] ??= []).push(`${svc.p99}${earlier ? `/${earlier.p99}` : ''}/${pgl.p99}`);
        report([base, svc, ...(earlier ? [earlier] : []), pgl], base, pairs);
      } else report([base, svc, ...(earlier ? [earlier] : [])], base, pairs);
    }
  }
  console.log('\nservice / baseline (own processes), each round, and the spread:');
  for (const [name, list] of Object.entries(ratios)) {
    const shown = list.map((ratio) => ratio.toFixed(2)).join(' ');
    console.log(
      `  ${name.padEnd(44)} ${shown}   min ${Math.min(...list).toFixed(2)} max ${Math.max(...list).toFixed(2)}`,
    );
  }
  console.log('\nCPU time per request, service / baseline, each round:');
  for (const [name, list] of Object.entries(cpuRatios)) {
    console.log(`  ${name.padEnd(44)} ${list.map((ratio) => ratio.toFixed(2)).join(' ')}`);
  }
  if (peer) {
    console.log('\nservice / PostGraphile (own processes), each round, and the spread:');
    for (const [name, list] of Object.entries(peerRatios)) {
      const shown = list.map((ratio) => ratio.toFixed(2)).join(' ');
      console.log(
        `  ${name.padEnd(44)} ${shown}   min ${Math.min(...list).toFixed(2)} max ${Math.max(...list).toFixed(2)}`,
      );
    }
  }
  if (before) {
    console.log('\nbefore (BENCH_BEFORE_ROOT) / baseline, each round:');
    for (const [name, list] of Object.entries(beforeRatios)) {
      console.log(`  ${name.padEnd(44)} ${list.map((ratio) => ratio.toFixed(2)).join(' ')}`);
    }
    console.log('\nbefore / PostGraphile, each round:');
    for (const [name, list] of Object.entries(beforePeerRatios)) {
      console.log(`  ${name.padEnd(44)} ${list.map((ratio) => ratio.toFixed(2)).join(' ')}`);
    }
  }
  if (peer) {
    console.log(`\np99 ms, service${before ? '/before' : ''}/PostGraphile, each round:`);
    for (const [name, list] of Object.entries(p99s)) {
      console.log(`  ${name.padEnd(44)} ${list.join('  ')}`);
    }
  }
  // A search box's wait: each search alone, one request at a time (warm: after its load).
  for (const s of scenarios.filter((one) => one.variables.q)) {
    const body = JSON.stringify({ query: queries[s.field], variables: s.variables });
    await oneAtATime(`${s.name}, 50 requests one at a time`, Array<string>(50).fill(body), {
      service: graph,
      baseline: `${baseline.url}/${s.field}`,
      headers,
    });
  }
  if (scenarios.some((s) => s.field === 'contactDuplicates')) {
    await oneAtATime(
      'contactDuplicates(id), 200 contacts one request at a time',
      sampled.map(({ id }) =>
        JSON.stringify({ query: queries.contactDuplicates, variables: { id } }),
      ),
      { service: graph, baseline: `${baseline.url}/contactDuplicates`, headers },
    );
  }
  console.log(`\nsvc serve peak memory: ${peakRss(service.child.pid as number)}`);
  if (before) console.log(`before's peak memory: ${peakRss(before.child.pid as number)}`);
  if (!only) await definitionTimes(graph, headers);
  await baseline.close();
  await peer?.close();
  await service.stop();
  await before?.stop();

  if (!only) await plans(db.url, workspaceId, [nameFragment, broadFragment, digitsFragment]);
  if (!only || scenarios.some((s) => s.field === 'contactDuplicates')) {
    await duplicatesPlan(db.url, workspaceId, twinId ?? contactId);
  }
} finally {
  if (process.env.BENCH_KEEP || kept) console.log(`kept database ${db.name}`);
  else await db.drop();
}
