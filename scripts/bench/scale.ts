// npm run bench:scale: the read paths of the graph at scale, each against the same SQL
// served as JSON by a bare node:http handler with postgres.js in the same run.
//  - seeds a scratch database with COPY: one workspace, 50 users, BENCH_CONTACTS contacts
//    (default 1,000,000) with an email and a phone each, and as many tasks over the users;
//    the secondary indexes are dropped for the load and rebuilt from their own definitions;
//  - measures requests/s and p50/p99 at fixed concurrency for `contactPage` (unfiltered,
//    by name fragment, by digits), `contacts` by cursor (first page, far in), `tasks(date:)`
//    and `contact(id)` with identities and tasks;
//  - prints EXPLAIN (ANALYZE, BUFFERS) of the search and first-page statements and the
//    peak RSS (VmHWM) of the `svc serve` process.
// BENCH_CONTACTS, BENCH_SECONDS (10), BENCH_CONNECTIONS (16, below
// SVC_GRAPH_OPERATIONS_PER_USER), BENCH_KEEP=1 keeps the database.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import postgres from 'postgres';
import { buildCatalogue } from '../../src/auth/access.js';
import { parseSecret, secretMatches } from '../../src/auth/secrets.js';
import { createApiToken } from '../../src/auth/tokens.js';
import { createDatabase } from '../../src/db/client.js';
import { migrate, seed } from './scale-data.js';
import { freePort, load, report, scratchDatabase, startServe, type LoadResult } from './support.js';
import { decodeCursor, encodeCursor } from '../../src/paging/index.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const TASKS = Number(process.env.BENCH_TASKS ?? CONTACTS);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PAGE = 50;
/** The service's pool (createDatabase's default); the baseline gets the same. */
const POOL = 10;

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

// ---------------------------------------------------------------------------- baseline

type Sql = postgres.Sql;

/** `%fragment%` for LIKE with `%`, `_`, `\` literal (as src/contacts/queries.ts). */
function containing(fragment: string): string {
  return `%${fragment.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The contacts filter of src/contacts/queries.ts for `q`. */
function qFilter(sql: Sql, workspaceId: string, q: string | undefined) {
  const trimmed = q?.trim();
  if (!trimmed) return sql``;
  const pattern = containing(trimmed.toLowerCase());
  const digits = trimmed.replace(/\D/g, '');
  const byDigits =
    digits.length >= 3 ? sql`or identifier_digits like ${containing(digits)}` : sql``;
  return sql`and id = any(array(
    select id from contacts where workspace_id = ${workspaceId} and lower(name) like ${pattern}
    union
    select contact_id from contact_identities
    where workspace_id = ${workspaceId} and (lower(display_name) like ${pattern} ${byDigits})))`;
}

const identityColumns = (sql: Sql) =>
  sql`workspace_id, id, contact_id, channel, identifier, identifier_key, identifier_digits, display_name, created_at`;

const contactColumns = (sql: Sql) => sql`workspace_id, id, name, created_at, updated_at`;

/**
 * The statements the service runs for each benchmarked request, served as JSON by a bare
 * node:http handler: the token lookup (src/auth/credentials.ts), then the page, count,
 * identity and task reads of src/contacts and src/tasks.
 */
async function baselineServer(databaseUrl: string) {
  const port = await freePort();
  const database = createDatabase(databaseUrl, { max: POOL });
  const sql = database.sql;

  async function actor(req: IncomingMessage) {
    const parsed = parseSecret('a1_', (req.headers.authorization ?? '').slice(7));
    if (!parsed) return null;
    const [row] = await sql<{ secret_hash: Buffer; user_id: string }[]>`
      select t.secret_hash, t.name, t.scopes, t.last_used_at, u.id as user_id, u.role
      from api_tokens t
      join users u on u.workspace_id = t.workspace_id and u.id = t.user_id
      join workspaces w on w.id = t.workspace_id
      where t.workspace_id = ${parsed.workspaceId} and t.id = ${parsed.id} and t.revoked_at is null
        and (t.expires_at is null or t.expires_at > now()) and u.disabled_at is null
        and w.deactivated_at is null`;
    if (!row || !secretMatches(row.secret_hash, parsed.secret)) return null;
    return { workspaceId: parsed.workspaceId, userId: row.user_id };
  }

  async function identitiesOf(workspaceId: string, ids: string[]) {
    if (ids.length === 0) return new Map<string, unknown[]>();
    const rows = await sql<{ contact_id: string; channel: string; identifier: string }[]>`
      select ${identityColumns(sql)} from contact_identities
      where workspace_id = ${workspaceId} and contact_id in ${sql(ids)}
      order by created_at asc, id asc`;
    const byContact = new Map<string, unknown[]>(ids.map((id) => [id, []]));
    for (const row of rows) {
      byContact.get(row.contact_id)?.push({ channel: row.channel, identifier: row.identifier });
    }
    return byContact;
  }

  type Vars = Record<string, string | undefined>;
  const handlers: Record<string, (ws: string, userId: string, v: Vars) => Promise<unknown>> = {
    async contactPage(ws, _user, v) {
      const filter = qFilter(sql, ws, v.q);
      const [items, [count]] = await Promise.all([
        sql<{ id: string; name: string }[]>`
          select ${contactColumns(sql)} from contacts where workspace_id = ${ws} ${filter}
          order by lower(name) asc, id asc limit ${PAGE} offset ${0}`,
        v.q?.trim()
          ? sql<{ total: number }[]>`select count(*)::int as total from contacts
              where workspace_id = ${ws} ${filter}`
          : sql<{ total: number }[]>`select contacts as total from workspace_counts
              where workspace_id = ${ws}`,
      ]);
      const identities = await identitiesOf(
        ws,
        items.map((c) => c.id),
      );
      return {
        contactPage: {
          total: Number(count?.total ?? 0),
          items: items.map((c) => ({ id: c.id, name: c.name, identities: identities.get(c.id) })),
        },
      };
    },
    async contacts(ws, _user, v) {
      let position = sql``;
      if (v.after) {
        const [sortName, id] = decodeCursor('contacts', v.after, 2) as [string, string];
        position = sql`and (lower(name), id) > (${sortName}, ${id})`;
      }
      const rows = await sql<{ id: string; name: string; sort_name: string }[]>`
        select ${contactColumns(sql)}, lower(name) as sort_name from contacts
        where workspace_id = ${ws} ${position}
        order by lower(name) asc, id asc limit ${PAGE + 1}`;
      const page = rows.slice(0, PAGE);
      const identities = await identitiesOf(
        ws,
        page.map((c) => c.id),
      );
      const edges = page.map((c) => ({
        cursor: encodeCursor('contacts', [c.sort_name, c.id]),
        node: { id: c.id, name: c.name, identities: identities.get(c.id) },
      }));
      return {
        contacts: {
          edges,
          pageInfo: { hasNextPage: rows.length > PAGE, endCursor: edges.at(-1)?.cursor ?? null },
        },
      };
    },
    async tasks(ws, userId, v) {
      const rows = await sql<{ id: string; title: string; due_on: string; status: string }[]>`
        select * from tasks
        where workspace_id = ${ws} and assignee_id = ${userId} and due_on = ${v.date as string}
          and status = ${'open'}
        order by due_on asc nulls last, id asc limit ${PAGE + 1}`;
      const page = rows.slice(0, PAGE);
      const edges = page.map((t) => ({
        cursor: encodeCursor('tasks', [String(t.due_on), t.id]),
        node: { id: t.id, title: t.title, dueOn: t.due_on, status: t.status },
      }));
      return {
        tasks: {
          edges,
          pageInfo: { hasNextPage: rows.length > PAGE, endCursor: edges.at(-1)?.cursor ?? null },
        },
      };
    },
    async contact(ws, _user, v) {
      const id = v.id as string;
      const [contact] = await sql<{ id: string; name: string }[]>`
        select ${contactColumns(sql)} from contacts where workspace_id = ${ws} and id = ${id}`;
      if (!contact) return { contact: null };
      const [identities, tasks] = await Promise.all([
        identitiesOf(ws, [id]),
        sql<{ id: string; title: string; due_on: string; status: string }[]>`
          select tasks.* from tasks
          inner join (
            select id, row_number() over (partition by contact_id order by due_on asc nulls last, id) as rank
            from tasks where workspace_id = ${ws} and contact_id in ${sql([id])} and status = ${'open'}
          ) ranked on ranked.id = tasks.id
          where tasks.workspace_id = ${ws} and ranked.rank <= ${PAGE}
          order by tasks.due_on asc nulls last, tasks.id asc`,
      ]);
      return {
        contact: {
          id: contact.id,
          name: contact.name,
          identities: identities.get(id),
          tasks: tasks.map((t) => ({
            id: t.id,
            title: t.title,
            dueOn: t.due_on,
            status: t.status,
          })),
        },
      };
    },
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        try {
          const who = await actor(req);
          if (!who) return res.writeHead(401).end();
          const { variables } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
            variables?: Vars;
          };
          const handler = handlers[(req.url ?? '/').slice(1)];
          if (!handler) return res.writeHead(404).end();
          const body = JSON.stringify({
            data: await handler(who.workspaceId, who.userId, variables ?? {}),
          });
          res.writeHead(200, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          });
          res.end(body);
        } catch (error) {
          console.error(error);
          res.writeHead(500).end();
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      const closed = new Promise((r) => server.close(r));
      server.closeAllConnections();
      await closed;
      await database.close();
    },
  };
}

// ---------------------------------------------------------------------------- run

const CONTACT_FIELDS = 'id name identities { channel identifier }';
const queries = {
  contactPage: `query ($q: String) { contactPage(q: $q) { total items { ${CONTACT_FIELDS} } } }`,
  contacts: `query ($after: String) { contacts(after: $after) { edges { cursor node { ${CONTACT_FIELDS} } } pageInfo { hasNextPage endCursor } } }`,
  tasks: `query ($date: Date!) { tasks(date: $date) { edges { cursor node { id title dueOn status } } pageInfo { hasNextPage endCursor } } }`,
  contact: `query ($id: UUID!) { contact(id: $id) { ${CONTACT_FIELDS} tasks { id title dueOn status } } }`,
};

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

/** The page and count statements of `contactPage`, as the service words them. */
async function plans(url: string, workspaceId: string, searches: string[]) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const page = (filter: string) =>
      `select "workspace_id", "id", "name", "created_at", "updated_at" from "contacts"
       where ("contacts"."workspace_id" = $1${filter})
       order by lower("contacts"."name") asc, "contacts"."id" asc limit 50`;
    const count = (filter: string) =>
      `select count(*)::int from "contacts" where ("contacts"."workspace_id" = $1${filter})`;
    await explain(sql, 'contactPage first page, unfiltered', page(''), [workspaceId]);
    for (const q of searches) {
      const digits = q.replace(/\D/g, '');
      const filter =
        ` and "contacts"."id" = any(array(select "id" from "contacts" where "workspace_id" = $1 and lower("name") like $2` +
        ` union select "contact_id" from "contact_identities"` +
        ` where "workspace_id" = $1 and (lower("display_name") like $2` +
        (digits.length >= 3 ? ` or "identifier_digits" like $3` : '') +
        `)))`;
      const params = [workspaceId, containing(q.toLowerCase())];
      if (digits.length >= 3) params.push(containing(digits));
      await explain(sql, `contactPage q=${q}: page`, page(filter), params);
      await explain(sql, `contactPage q=${q}: count`, count(filter), params);
    }
  } finally {
    await sql.end();
  }
}

function peakRss(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const line = (key: string) =>
    /(\d+) kB/.exec(status.split('\n').find((l) => l.startsWith(key)) ?? '')?.[1];
  const mb = (kb: string | undefined) => `${(Number(kb) / 1024).toFixed(0)} MB`;
  return `VmHWM ${mb(line('VmHWM:'))}, VmRSS ${mb(line('VmRSS:'))}`;
}

const db = await scratchDatabase();
try {
  const started = performance.now();
  migrate(db.url);
  console.log(`migrate: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const seeded = await seed(db.url, { contacts: CONTACTS, tasks: TASKS });
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
  await admin.end();
  const farCursor = encodeCursor('contacts', [far?.sort_name as string, far?.id as string]);
  const contactId = withTasks?.contact_id ?? (contactIds[0] as string);

  const nameFragment = process.env.BENCH_Q_NAME ?? 'kelmor';
  const broadFragment = process.env.BENCH_Q_BROAD ?? 'hann';
  const digitsFragment = process.env.BENCH_Q_DIGITS ?? '4821';
  const scenarios: Scenario[] = [
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
    { name: 'contact(id) + identities + tasks', field: 'contact', variables: { id: contactId } },
  ];

  const service = await startServe({ SVC_DATABASE_URL: db.url });
  const baseline = await baselineServer(db.url);
  const graph = `${service.url}/api/graphql`;
  const headers = { authorization: `Bearer ${secret}` };

  // Both answer every scenario, and with the same number of rows, before any load.
  for (const s of scenarios) {
    const body = JSON.stringify({ query: queries[s.field], variables: s.variables });
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    };
    const fromService = (await (await fetch(graph, init)).json()) as {
      data?: unknown;
      errors?: unknown;
    };
    if (fromService.errors || !fromService.data) {
      throw new Error(`${s.name}: ${JSON.stringify(fromService.errors)}`);
    }
    const fromBaseline = (await (await fetch(`${baseline.url}/${s.field}`, init)).json()) as {
      data: unknown;
    };
    const size = (data: unknown) => JSON.stringify(data).match(/"id"/g)?.length ?? 0;
    const total = (data: unknown) => /"total":(\d+)/.exec(JSON.stringify(data))?.[1] ?? '';
    console.log(
      `${s.name}: ${size(fromService.data)} ids${total(fromService.data) ? `, total ${total(fromService.data)}` : ''} (baseline ${size(fromBaseline.data)} ids${total(fromBaseline.data) ? `, total ${total(fromBaseline.data)}` : ''})`,
    );
  }

  console.log(
    `\nload: ${connections} connections, ${seconds} s each, ${CONTACTS} contacts, one machine (load generator shares the cores)\n`,
  );
  const rows: LoadResult[] = [];
  const pairs: Record<string, LoadResult> = {};
  for (const s of scenarios) {
    const body = JSON.stringify({ query: queries[s.field], variables: s.variables });
    const base = await load(`  baseline: ${s.name}`, {
      url: `${baseline.url}/${s.field}`,
      body,
      headers,
      connections,
      seconds,
    });
    const svc = await load(`svc: ${s.name}`, { url: graph, body, headers, connections, seconds });
    pairs[svc.name] = base;
    pairs[base.name] = base;
    rows.push(base, svc);
    report([base, svc], base, pairs);
  }
  console.log('\nall:');
  report(rows, rows[0] as LoadResult, pairs);
  console.log(`\nsvc serve peak memory: ${peakRss(service.child.pid as number)}`);
  await definitionTimes(graph, headers);
  await baseline.close();
  await service.stop();

  await plans(db.url, workspaceId, [nameFragment, broadFragment, digitsFragment]);
} finally {
  if (process.env.BENCH_KEEP) console.log(`kept database ${db.name}`);
  else await db.drop();
}
