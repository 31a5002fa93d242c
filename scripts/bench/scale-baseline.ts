// The floor of npm run bench:scale: the least work a correct answer to each benchmarked
// request needs, served by a node:http handler with postgres.js. Run as its own process
// (`node --import tsx scale-baseline.ts`, BENCH_DATABASE_URL set), so it shares no event
// loop with the load generator: it prints `listening <url>` and serves until SIGTERM.
//
// What it does per request, and nothing more (issue 29):
//  - the credential as the service holds it (src/auth/credential-cache.ts): a token's row
//    is read once and held for HELD_MS; the presented secret is still parsed, hashed and
//    compared on every request;
//  - one prepared statement where one can answer: a page's contacts with their identities
//    (json aggregation) and the stored total; a contact with its identities and open tasks;
//    the caller's tasks of a day, with each task's contact name by a join;
//  - the answer the service gives, byte for byte (scale.ts compares the two bodies once per
//    scenario before any load).
// The searches (`contactPage(q:)`) keep the service's search statements.
import { createServer, type IncomingMessage } from 'node:http';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { HELD_MS } from '../../src/auth/credential-cache.js';
import { parseSecret, secretMatches } from '../../src/auth/secrets.js';
import { NAME_SIMILARITY } from '../../src/contacts/queries.js';
import { decodeCursor, encodeCursor } from '../../src/paging/index.js';
import { serviceVersion } from '../../src/meta/version.js';
import { freePort } from './support.js';

/** The service's pool (createDatabase's default); the baseline gets the same. */
export const POOL = 10;
const PAGE = 50;
/** contactDuplicates's default `first`. */
const DUPLICATES = 10;

/** src/contacts/tables.ts `identityMatchKey` over the table named `t`. */
const KEY = (t: string) => `(case
  when ${t}.identifier like '%@%' then lower(regexp_replace(${t}.identifier, '[+][^@]*@', '@'))
  when ${t}.identifier ~ '^[0-9+(). /-]+$' and length(${t}.identifier_digits) >= 7
    then 'tel:' || right(${t}.identifier_digits, 9)
end)`;

// ---------------------------------------------------------------------------- baseline

type Sql = postgres.Sql;

/** `%fragment%` for LIKE with `%`, `_`, `\` literal (as src/contacts/queries.ts). */
export function containing(fragment: string): string {
  return `%${fragment.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * A search's page as src/contacts/queries.ts runs it (`searchPage`): the matches' rows of
 * contact_search sorted and counted in one pass, then the page's contacts with their
 * identities, in one statement.
 */
async function searchPage(sql: Sql, workspaceId: string, q: string) {
  const pattern = containing(q.toLowerCase());
  const digits = q.replace(/\D/g, '');
  const byDigits = digits.length >= 3 ? sql`or digits like ${containing(digits)}` : sql``;
  const rows = await sql<{ id: string; name: string; identities: unknown[]; total: number }[]>`
    select c.id, c.name, coalesce((select json_agg(json_build_object('channel', i.channel,
        'identifier', i.identifier) order by i.created_at, i.id)
      from contact_identities i where i.workspace_id = c.workspace_id and i.contact_id = c.id),
      '[]'::json) as identities, m.total
    from (select contact_id, sort_name, (count(*) over ())::int as total from contact_search
      where workspace_id = ${workspaceId}
        and (sort_name like ${pattern} or names like ${pattern} ${byDigits})
      order by sort_name, contact_id limit ${PAGE} offset ${0}) m
    join contacts c on c.workspace_id = ${workspaceId} and c.id = m.contact_id
    order by m.sort_name, m.contact_id`;
  return {
    contactPage: {
      total: rows[0]?.total ?? 0,
      items: rows.map((c) => ({ id: c.id, name: c.name, identities: c.identities })),
    },
  };
}

/** A token's row, held as the service's credential cache holds it. */
interface Held {
  secretHash: Buffer;
  userId: string;
  until: number;
}

/** One `{ id, name, identities { channel identifier } }` of a contact row `c`, as json. */
const IDENTITIES = `coalesce((select json_agg(json_build_object('channel', i.channel, 'identifier', i.identifier)
    order by i.created_at, i.id)
  from contact_identities i where i.workspace_id = c.workspace_id and i.contact_id = c.id), '[]'::json)`;

/**
 * The floor's server: for each benchmarked request the least work its answer needs (see
 * the head of this file), the service's answer byte for byte.
 */
export async function baselineServer(databaseUrl: string) {
  const port = await freePort();
  const sql = postgres(databaseUrl, { max: POOL, onnotice: () => {} });
  // contactDuplicates's floor: its connections carry the trigram threshold from the start,
  // so its statement needs no set_config (the service sets it in its statement).
  const similar = postgres(databaseUrl, {
    max: POOL,
    onnotice: () => {},
    connection: { 'pg_trgm.similarity_threshold': String(NAME_SIMILARITY) },
  });

  const held = new Map<string, Held>();

  /** The caller: the token's row held for HELD_MS, its secret checked every time. */
  async function actor(req: IncomingMessage) {
    const parsed = parseSecret('a1_', (req.headers.authorization ?? '').slice(7));
    if (!parsed) return null;
    const key = `${parsed.workspaceId}:${parsed.id}`;
    let entry = held.get(key);
    if (!entry || entry.until <= Date.now()) {
      const [row] = await sql<{ secret_hash: Buffer; user_id: string }[]>`
        select t.secret_hash, t.name, t.scopes, t.last_used_at, u.id as user_id, u.role
        from api_tokens t
        join users u on u.workspace_id = t.workspace_id and u.id = t.user_id
        join workspaces w on w.id = t.workspace_id
        where t.workspace_id = ${parsed.workspaceId} and t.id = ${parsed.id} and t.revoked_at is null
          and (t.expires_at is null or t.expires_at > now()) and u.disabled_at is null
          and w.deactivated_at is null`;
      if (!row) return null;
      entry = { secretHash: row.secret_hash, userId: row.user_id, until: Date.now() + HELD_MS };
      held.set(key, entry);
    }
    if (!secretMatches(entry.secretHash, parsed.secret)) return null;
    return { workspaceId: parsed.workspaceId, userId: entry.userId };
  }

  /** A page of tasks (id title dueOn status, and the contact's name when asked) as edges. */
  function taskEdges(
    rows: { id: string; title: string; due_on: string | null; status: string; name?: string }[],
    withContact: boolean,
  ) {
    const page = rows.length > PAGE ? rows.slice(0, PAGE) : rows;
    const edges = page.map((t) => ({
      cursor: encodeCursor('tasks', [t.due_on ?? '', t.id]),
      node: withContact
        ? {
            id: t.id,
            title: t.title,
            dueOn: t.due_on,
            status: t.status,
            contact: t.name === null ? null : { name: t.name },
          }
        : { id: t.id, title: t.title, dueOn: t.due_on, status: t.status },
    }));
    return {
      tasks: {
        edges,
        pageInfo: { hasNextPage: rows.length > PAGE, endCursor: edges.at(-1)?.cursor ?? null },
      },
    };
  }

  type Vars = Record<string, string | undefined>;
  const handlers: Record<string, (ws: string, userId: string, v: Vars) => Promise<unknown>> = {
    async contactPage(ws, _user, v) {
      if (v.q?.trim()) return searchPage(sql, ws, v.q.trim());
      // The page, each contact's identities and the stored total: one statement.
      const rows = await sql<{ id: string; name: string; identities: unknown; total: number }[]>`
        select c.id, c.name, ${sql.unsafe(IDENTITIES)} as identities,
          (select contacts from workspace_counts where workspace_id = ${ws}) as total
        from contacts c where c.workspace_id = ${ws}
        order by lower(c.name) asc, c.id asc limit ${PAGE}`;
      return {
        contactPage: {
          total: Number(rows[0]?.total ?? 0),
          items: rows.map((c) => ({ id: c.id, name: c.name, identities: c.identities })),
        },
      };
    },
    async contacts(ws, _user, v) {
      let position = sql``;
      if (v.after) {
        const [sortName, id] = decodeCursor('contacts', v.after, 2) as [string, string];
        position = sql`and (lower(c.name), c.id) > (${sortName}, ${id})`;
      }
      const rows = await sql<
        { id: string; name: string; sort_name: string; identities: unknown }[]
      >`
        select c.id, c.name, lower(c.name) as sort_name, ${sql.unsafe(IDENTITIES)} as identities
        from contacts c where c.workspace_id = ${ws} ${position}
        order by lower(c.name) asc, c.id asc limit ${PAGE + 1}`;
      const page = rows.slice(0, PAGE);
      const edges = page.map((c) => ({
        cursor: encodeCursor('contacts', [c.sort_name, c.id]),
        node: { id: c.id, name: c.name, identities: c.identities },
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
        select id, title, due_on::text, status from tasks
        where workspace_id = ${ws} and assignee_id = ${userId} and due_on = ${v.date as string}
          and status = 'open'
        order by due_on asc nulls last, id asc limit ${PAGE + 1}`;
      return taskEdges(rows, false);
    },
    async tasksWithContact(ws, userId, v) {
      // Each task's contact name by a join, in the same statement.
      const rows = await sql<
        { id: string; title: string; due_on: string; status: string; name: string }[]
      >`
        select t.id, t.title, t.due_on::text, t.status, c.name from tasks t
        left join contacts c on c.workspace_id = t.workspace_id and c.id = t.contact_id
        where t.workspace_id = ${ws} and t.assignee_id = ${userId} and t.due_on = ${v.date as string}
          and t.status = 'open'
        order by t.due_on asc nulls last, t.id asc limit ${PAGE + 1}`;
      return taskEdges(rows, true);
    },
    async contactDuplicates(ws, _user, v) {
      // The floor of the service's statement: the same keys, lookups, scan and score, with
      // no per-key or per-name bound, no threshold set in it, no answer told apart for an
      // unknown contact. Its contacts are read by key (`limit 1` keeps the lateral from
      // becoming a hash join over every contact, 870 ms, the plan it took first).
      const rows = await similar<
        { id: string; name: string; score: number; similarity: number }[]
      >`with me as (select id, lower(name) as name from contacts where workspace_id = ${ws} and id = ${v.id as string}),
        leads as (
          select o.contact_id, ${similar.unsafe(KEY('o'))} like 'tel:%' as phone
          from me join contact_identities i on i.workspace_id = ${ws} and i.contact_id = me.id
          join contact_identities o on o.workspace_id = ${ws} and ${similar.unsafe(KEY('o'))} = ${similar.unsafe(KEY('i'))}
            and o.contact_id <> me.id
          union all
          select c.id, null from me, contacts c
          where lower(c.name) % me.name and c.workspace_id = ${ws} and c.id <> me.id
        ),
        found as (
          select contact_id, coalesce(bool_or(not phone), false) as address,
            coalesce(bool_or(phone), false) as phone
          from leads group by contact_id
        )
        select c.id, c.name, c.created_at, c.updated_at, s.similarity,
          1 - (1 - 0.9 * f.address::int) * (1 - 0.8 * f.phone::int)
            * (1 - 0.7 * case when s.similarity >= ${NAME_SIMILARITY} then s.similarity else 0 end) as score
        from found f cross join me
        cross join lateral (select id, name, created_at, updated_at from contacts
          where workspace_id = ${ws} and id = f.contact_id limit 1) c
        cross join lateral (select similarity(lower(c.name), me.name)::float8 as similarity) s
        order by score desc, lower(c.name), c.id limit ${DUPLICATES}`;
      return {
        // In the query's field order, as the service answers.
        contactDuplicates: rows.map((r) => ({
          score: Number(r.score),
          nameSimilarity: r.similarity,
          contact: { id: r.id, name: r.name },
        })),
      };
    },
    async version() {
      return { version: serviceVersion };
    },
    async contact(ws, _user, v) {
      // The contact, its identities and its first open tasks: one statement.
      const [contact] = await sql<
        { id: string; name: string; identities: unknown; tasks: unknown }[]
      >`
        select c.id, c.name, ${sql.unsafe(IDENTITIES)} as identities,
          coalesce((select json_agg(json_build_object('id', t.id, 'title', t.title,
              'dueOn', t.due_on, 'status', t.status) order by t.due_on nulls last, t.id)
            from (select id, title, due_on, status from tasks
              where workspace_id = c.workspace_id and contact_id = c.id and status = 'open'
              order by due_on nulls last, id limit ${PAGE}) t), '[]'::json) as tasks
        from contacts c where c.workspace_id = ${ws} and c.id = ${v.id as string}`;
      if (!contact) return { contact: null };
      return {
        contact: {
          id: contact.id,
          name: contact.name,
          identities: contact.identities,
          tasks: contact.tasks,
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
      await sql.end();
      await similar.end();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const url = process.env.BENCH_DATABASE_URL;
  if (!url) throw new Error('BENCH_DATABASE_URL names the database to serve');
  const server = await baselineServer(url);
  console.log(`listening ${server.url}`);
  process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
}
