// Scratch: svc serve under --cpu-prof, the tasks(date:) + contact name load for 12 s.
import { spawn } from 'node:child_process';
import postgres from 'postgres';
import { buildCatalogue } from '../src/auth/access.js';
import { createApiToken } from '../src/auth/tokens.js';
import { createDatabase } from '../src/db/client.js';
import { freePort, load } from '../scripts/bench/support.js';

const url = 'postgres://postgres@127.0.0.1:5432/svc_bench_07aaf64c';
const admin = postgres(url, { max: 1 });
const [ws] = await admin`select workspace_id from contacts group by 1 order by count(*) desc limit 1`;
const [user] = await admin`select assignee_id from tasks where workspace_id = ${ws!.workspace_id} and assignee_id is not null group by 1 order by count(*) desc limit 1`;
await admin.end();
const database = createDatabase(url, { max: 1 });
const { secret } = await createApiToken(database.db, buildCatalogue([]), {
  workspaceId: ws!.workspace_id, userId: user!.assignee_id, name: 'prof', scopes: null, ttlDays: null,
});
await database.close();
const port = await freePort();
const child = spawn('/work/main/node_modules/node/bin/node', ['--cpu-prof', '--cpu-prof-dir', '/tmp/prof', 'bin/svc.js', 'serve'], {
  cwd: '/work/main', env: { PATH: process.env.PATH ?? '', SVC_ADDR: `127.0.0.1:${port}`, SVC_DATABASE_URL: url }, stdio: ['ignore', 'ignore', 'inherit'],
});
for (;;) {
  try { if ((await fetch(`http://127.0.0.1:${port}/api/readyz`)).status === 200) break; } catch {}
  await new Promise((r) => setTimeout(r, 50));
}
const body = JSON.stringify({ query: `query ($date: Date!) { tasks(date: $date) { edges { cursor node { id title dueOn status contact { name } } } pageInfo { hasNextPage endCursor } } }`, variables: { date: '2025-12-12' } });
const headers = { authorization: `Bearer ${secret}` };
await load('warm', { url: `http://127.0.0.1:${port}/api/graphql`, body, headers, connections: 16, seconds: 5 });
const r = await load('tasks+name', { url: `http://127.0.0.1:${port}/api/graphql`, body, headers, connections: 16, seconds: 12, pid: child.pid });
console.log(r);
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
