// npm run bench, fields scenario: a page of 200 contacts with 20 custom field values each
// (19 texts and a repeater of 50 entries) read through `Contact.fieldValues`, against the
// same SQL served as JSON by a bare node:http handler in the same run.
import { createServer } from 'node:http';
import { parseSecret } from '../../src/auth/secrets.js';
import { createDatabase } from '../../src/db/client.js';
import { freePort, load, type LoadResult } from './support.js';

const CONTACTS = 200;
const TEXT_FIELDS = 19;
const ENTRIES = 50;

export const FIELDS_PAGE = JSON.stringify({
  query: `{ contactPage(limit: ${CONTACTS}) { items { id name fieldValues } } }`,
});

/** Defines the fields through the graph, then writes contacts, values and entries with SQL. */
export async function seedFields(databaseUrl: string, graph: string, token: string) {
  const post = async (query: string, variables: Record<string, unknown>) => {
    const response = await fetch(graph, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
  };
  const define = 'mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }';
  for (let i = 0; i < TEXT_FIELDS; i += 1) {
    await post(define, { input: { name: `text${i}`, label: `Text ${i}`, kind: 'text' } });
  }
  const subFields = [
    { name: 'street', label: 'Street', kind: 'text' },
    { name: 'city', label: 'City', kind: 'text' },
  ];
  await post(define, {
    input: { name: 'addresses', label: 'Addresses', kind: 'repeater', subFields },
  });
  const database = createDatabase(databaseUrl, { max: 2 });
  try {
    const { sql } = database;
    const [workspace] = await sql<{ workspace_id: string }[]>`
      select workspace_id from field_definitions limit 1`;
    const workspaceId = workspace!.workspace_id;
    await sql`
      insert into contacts (workspace_id, name)
      select ${workspaceId}, 'Contact ' || lpad(n::text, 4, '0') from generate_series(1, ${CONTACTS}) n`;
    await sql`
      insert into contact_field_values (workspace_id, contact_id, field_id, value)
      select c.workspace_id, c.id, f.id, to_jsonb(f.name || ' of ' || c.name)
      from contacts c join field_definitions f on f.workspace_id = c.workspace_id and f.kind = 'text'
      where c.workspace_id = ${workspaceId}`;
    await sql`
      insert into contact_field_entries (workspace_id, contact_id, field_id, cells)
      select c.workspace_id, c.id, f.id,
        jsonb_build_object('street', n || ' Main Street', 'city', 'Springfield')
      from contacts c join field_definitions f on f.workspace_id = c.workspace_id and f.kind = 'repeater',
        generate_series(1, ${ENTRIES}) n
      where c.workspace_id = ${workspaceId}`;
  } finally {
    await database.close();
  }
}

/**
 * The page's SQL on node:http: the token read, the page, the definitions, every value and
 * every entry of the page, assembled as the service answers it.
 */
async function baselineFields(databaseUrl: string) {
  const port = await freePort();
  const database = createDatabase(databaseUrl, { max: 10 });
  const { sql } = database;
  const server = createServer((req, res) => {
    const parsed = parseSecret('a1_', (req.headers.authorization ?? '').slice(7));
    req.resume();
    if (!parsed) return res.writeHead(401).end();
    void (async () => {
      const ws = parsed.workspaceId;
      await sql`
        select t.secret_hash, t.scopes, u.id, u.role from api_tokens t
        join users u on u.workspace_id = t.workspace_id and u.id = t.user_id
        join workspaces w on w.id = t.workspace_id
        where t.workspace_id = ${ws} and t.id = ${parsed.id} and t.revoked_at is null
          and (t.expires_at is null or t.expires_at > now()) and u.disabled_at is null and w.deactivated_at is null`;
      const [items, definitions] = await Promise.all([
        sql<{ id: string; name: string }[]>`
          select id, name from contacts where workspace_id = ${ws}
          order by lower(name), id limit ${CONTACTS}`,
        sql<{ id: string; name: string; kind: string }[]>`
          select id, name, kind from field_definitions
          where workspace_id = ${ws} and archived_at is null order by position`,
      ]);
      const ids = items.map((item) => item.id);
      const [values, entries] = await Promise.all([
        sql<{ contact_id: string; field_id: string; value: unknown }[]>`
          select contact_id, field_id, value from contact_field_values
          where workspace_id = ${ws} and contact_id = any(${ids}::uuid[])`,
        sql<{ id: string; contact_id: string; field_id: string; cells: object }[]>`
          select id, contact_id, field_id, cells from contact_field_entries
          where workspace_id = ${ws} and contact_id = any(${ids}::uuid[]) order by created_at, id`,
      ]);
      const byContact = new Map(items.map((item) => [item.id, {} as Record<string, unknown>]));
      const names = new Map(definitions.map((d) => [d.id, d.name]));
      for (const row of values)
        byContact.get(row.contact_id)![names.get(row.field_id)!] = row.value;
      for (const row of entries) {
        const held = byContact.get(row.contact_id)!;
        const name = names.get(row.field_id)!;
        ((held[name] ??= []) as unknown[]).push({ ...row.cells, id: row.id });
      }
      const body = JSON.stringify({
        data: {
          contactPage: {
            items: items.map((item) => ({ ...item, fieldValues: byContact.get(item.id) })),
          },
        },
      });
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise((r) => server.close(r));
      await database.close();
    },
  };
}

/** The baseline's row and the service's, loaded one after the other. */
export async function fieldsRows(options: {
  databaseUrl: string;
  graph: string;
  token: string;
  connections: number;
  seconds: number;
}): Promise<[LoadResult, LoadResult]> {
  const headers = { authorization: `Bearer ${options.token}` };
  const baseline = await baselineFields(options.databaseUrl);
  try {
    const common = {
      body: FIELDS_PAGE,
      headers,
      connections: options.connections,
      seconds: options.seconds,
    };
    return [
      await load('baseline node:http + SQL of 200×20 fields', { url: baseline.url, ...common }),
      await load('svc contactPage(200) { fieldValues }', { url: options.graph, ...common }),
    ];
  } finally {
    await baseline.close();
  }
}
