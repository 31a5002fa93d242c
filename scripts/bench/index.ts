// npm run bench: the service against a bare node:http handler in the same run.
//  - the time from `svc serve` to ready with migrations current, on an empty database
//    (every migration applied) and on a migrated one;
//  - `{ version }` requests per second and latency, against a node:http handler that
//    answers the same JSON (the ceiling of any Node server on this machine);
//  - `me` through a token and through a session (a credential read per request);
//  - sign-in latency (argon2id verification), one at a time.
import { createServer } from 'node:http';
import { buildCatalogue } from '../../src/auth/access.js';
import { createSession, SESSION_COOKIE } from '../../src/auth/sessions.js';
import { createApiToken } from '../../src/auth/tokens.js';
import { createDatabase } from '../../src/db/client.js';
import { createAccount } from '../../src/users/service.js';
import { createWorkspace } from '../../src/workspaces/service.js';
import { freePort, load, report, scratchDatabase, startServe } from './support.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PASSWORD = 'bench password that is long enough';

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

async function credentials(url: string) {
  const database = createDatabase(url, { max: 2 });
  try {
    const workspace = await createWorkspace(database.db, { name: 'Bench' });
    const user = await createAccount(database.db, workspace.id, {
      email: 'bench@example.com',
      name: 'Bench',
      password: PASSWORD,
      role: 'admin',
    });
    const { secret } = await createApiToken(database.db, buildCatalogue([]), {
      workspaceId: workspace.id,
      userId: user.id,
      name: 'bench',
      scopes: null,
      ttlDays: null,
    });
    const session = await createSession(database.db, user);
    return { token: secret, cookie: `${SESSION_COOKIE}=${session}` };
  } finally {
    await database.close();
  }
}

async function loginLatency(url: string, rounds: number) {
  const body = JSON.stringify({
    query: 'mutation ($e: String!, $p: String!) { login(email: $e, password: $p) { me { id } } }',
    variables: { e: 'bench@example.com', p: PASSWORD },
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

const db = await scratchDatabase();
try {
  const cold = await startServe({ SVC_DATABASE_URL: db.url });
  await cold.stop();
  const service = await startServe({ SVC_DATABASE_URL: db.url });
  const { token, cookie } = await credentials(db.url);
  const graph = `${service.url}/api/graphql`;
  const version = JSON.stringify({ query: '{ version }' });
  const me = JSON.stringify({ query: '{ me { id name role } }' });
  const answer = await (
    await fetch(graph, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: version,
    })
  ).text();
  const baseline = await baselineServer(answer);

  console.log(
    `svc serve to ready: ${cold.readyMs.toFixed(0)} ms on an empty database (all migrations), ${service.readyMs.toFixed(0)} ms with migrations current`,
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
  const rows = [
    base,
    await load('svc { version } (token)', {
      url: graph,
      body: version,
      headers: { authorization: `Bearer ${token}` },
      connections,
      seconds,
    }),
    await load('svc { me } (token)', {
      url: graph,
      body: me,
      headers: { authorization: `Bearer ${token}` },
      connections,
      seconds,
    }),
    await load('svc { me } (session cookie)', {
      url: graph,
      body: me,
      headers: { cookie },
      connections,
      seconds,
    }),
  ];
  report(rows, base);
  await baseline.close();
  await service.stop();
} finally {
  await db.drop();
}
