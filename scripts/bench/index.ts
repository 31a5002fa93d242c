// npm run bench: the service against a bare node:http handler in the same run.
//  - the time from `svc serve` to ready with migrations current, on an empty database
//    (every migration applied) and on a migrated one;
//  - `{ version }` requests per second and latency, against a node:http handler that
//    answers the same JSON (the ceiling of any Node server on this machine);
//  - `me` through a token and through a session (a credential read per request);
//  - sign-in latency (argon2id verification), one at a time;
//  - a page of 200 contacts with 20 custom field values each (scripts/bench/fields.ts);
//  - importing 50,000 rows from CSV and .xlsx against COPY (scripts/bench/import.ts);
//  - signed chat webhook messages at a fixed rate against a bare handler writing the same
//    row (scripts/bench/chat.ts). BENCH_ONLY=chat runs that scenario alone; BENCH_ONLY=graph
//    the requests per second alone (what tracing on and off is compared by).
import { createServer } from 'node:http';
import { parseSecret } from '../../src/auth/secrets.js';
import { createSession, SESSION_COOKIE } from '../../src/auth/sessions.js';
import { createDatabase } from '../../src/db/client.js';
import { CHAT_ENV, chatScenario } from './chat.js';
import { fieldsRows, seedFields } from './fields.js';
import { importScenario } from './import.js';
import {
  BENCH_PASSWORD,
  benchAdmin,
  freePort,
  load,
  report,
  scratchDatabase,
  startServe,
} from './support.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
// Below SVC_GRAPH_OPERATIONS_PER_USER (20): every request here is one user's.
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);

async function baselineServer(body: string) {
  const port = await freePort();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

/**
 * The same SQL `me` costs through a token (the credential read, then the account read)
 * served as JSON by a bare node:http handler with postgres.js.
 */
async function baselineMe(databaseUrl: string) {
  const port = await freePort();
  const database = createDatabase(databaseUrl, { max: 10 });
  const { sql } = database;
  const server = createServer((req, res) => {
    const parsed = parseSecret('a1_', (req.headers.authorization ?? '').slice(7));
    req.resume();
    if (!parsed) return res.writeHead(401).end();
    void (async () => {
      const [token] = await sql`
        select t.secret_hash, t.name, t.scopes, u.id as user_id, u.role from api_tokens t
        join users u on u.workspace_id = t.workspace_id and u.id = t.user_id
        join workspaces w on w.id = t.workspace_id
        where t.workspace_id = ${parsed.workspaceId} and t.id = ${parsed.id} and t.revoked_at is null
          and (t.expires_at is null or t.expires_at > now()) and u.disabled_at is null and w.deactivated_at is null`;
      const [user] =
        await sql`select id, name, role from users where workspace_id = ${parsed.workspaceId} and id = ${token?.user_id}`;
      const body = JSON.stringify({ data: { me: user } });
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

async function credentials(url: string) {
  const database = createDatabase(url, { max: 2 });
  try {
    const { user, token } = await benchAdmin(database.db);
    const session = await createSession(database.db, user);
    return { token, cookie: `${SESSION_COOKIE}=${session}` };
  } finally {
    await database.close();
  }
}

async function loginLatency(url: string, rounds: number) {
  const body = JSON.stringify({
    query: 'mutation ($e: String!, $p: String!) { login(email: $e, password: $p) { me { id } } }',
    variables: { e: 'bench@example.com', p: BENCH_PASSWORD },
  });
  const times: number[] = [];
  for (let i = 0; i < rounds; i += 1) {
    const started = performance.now();
    const response = await fetch(`${url}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    await response.text();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return {
    p50: times[Math.floor(rounds / 2)] as number,
    p99: times[Math.floor(rounds * 0.99)] as number,
  };
}

const only = process.env.BENCH_ONLY;
if (only && only !== 'chat' && only !== 'graph') {
  throw new Error(`BENCH_ONLY=${only}: only "chat" and "graph" are known`);
}

const db = await scratchDatabase();
try {
  const cold = only === 'chat' ? null : await startServe({ SVC_DATABASE_URL: db.url });
  await cold?.stop();
  const service = await startServe({ SVC_DATABASE_URL: db.url, ...CHAT_ENV });
  try {
    const { token: token_, cookie } = await credentials(db.url);
    const graph = `${service.url}/api/graphql`;
    let baseline: Awaited<ReturnType<typeof baselineServer>> | undefined;
    if (only !== 'chat') {
      const version = JSON.stringify({ query: '{ version }' });
      const me = JSON.stringify({ query: '{ me { id name role } }' });
      const answer = await (
        await fetch(graph, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token_}` },
          body: version,
        })
      ).text();
      baseline = await baselineServer(answer);

      console.log(
        `svc serve to ready: ${cold!.readyMs.toFixed(0)} ms on an empty database (all migrations), ${service.readyMs.toFixed(0)} ms with migrations current`,
      );
      const login = await loginLatency(service.url, 40);
      console.log(
        `login (argon2id m=19456 t=2 p=1), one at a time: p50 ${login.p50.toFixed(1)} ms, p99 ${login.p99.toFixed(1)} ms`,
      );
      console.log(
        `load: ${connections} connections, ${seconds} s each, one machine (load generator shares the cores)\n`,
      );
      const base = await load('baseline node:http, same JSON', {
        url: baseline.url,
        body: version,
        connections,
        seconds,
      });
      const meBaseline = await baselineMe(db.url);
      // The service's CPU time per request: steadier than requests per second on a
      // machine whose cores other work shares (tracing on and off is compared by it).
      const pid = service.child.pid as number;
      const token = { authorization: `Bearer ${token_}` };
      const rows = [
        base,
        await load('svc { version } (token)', {
          url: graph,
          body: version,
          headers: token,
          connections,
          seconds,
          pid,
        }),
        await load('baseline node:http + SQL of me by token', {
          url: meBaseline.url,
          body: me,
          headers: token,
          connections,
          seconds,
        }),
        await load('svc { me } (token)', {
          url: graph,
          body: me,
          headers: token,
          connections,
          seconds,
          pid,
        }),
        await load('svc { me } (session cookie)', {
          url: graph,
          body: me,
          headers: { cookie },
          connections,
          seconds,
          pid,
        }),
      ];
      await meBaseline.close();
      report(rows, base);
    }
    if (!only) {
      await seedFields(db.url, graph, token_);
      const [fieldsBase, fieldsSvc] = await fieldsRows({
        databaseUrl: db.url,
        graph,
        token: token_,
        connections,
        seconds,
      });
      console.log('');
      report([fieldsBase, fieldsSvc], fieldsBase);
      await importScenario({
        databaseUrl: db.url,
        graph,
        token: token_,
        pid: service.child.pid as number,
      });
    }
    await baseline?.close();
    if (only !== 'graph') {
      await chatScenario({
        databaseUrl: db.url,
        graph,
        serviceUrl: service.url,
        token: token_,
        pid: service.child.pid as number,
      });
    }
  } finally {
    // A failed scenario must not leave `svc serve` running.
    await service.stop();
  }
} finally {
  await db.drop();
}
