// npm run bench:ab — two checkouts of the service compared on the same database, the same
// requests and the same machine, alternated A B A B so drift and noise fall on both: each
// round starts one `svc serve` of a checkout, loads it, and stops it. A is the checkout at
// BENCH_A_ROOT (a `git worktree` of the commit before a change), B this one.
//
//   git worktree add /tmp/svc-a <commit> && ln -s "$PWD/node_modules" /tmp/svc-a/
//   BENCH_A_ROOT=/tmp/svc-a npm run bench:ab
import path from 'node:path';
import { createDatabase } from '../../src/db/client.js';
import { migrate } from './scale-data.js';
import { benchAdmin, load, root, scratchDatabase, startServe, type LoadResult } from './support.js';

const aRoot = process.env.BENCH_A_ROOT;
if (!aRoot) throw new Error('BENCH_A_ROOT names the checkout to compare against');
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
const CONTACTS = 1_000;

/** A workspace with an admin's token and contacts, each with two identities. */
async function seed(url: string): Promise<string> {
  const database = createDatabase(url, { max: 2 });
  try {
    const { workspaceId, token: secret } = await benchAdmin(database.db);
    const { sql } = database;
    await sql`
      with made as (
        insert into contacts (workspace_id, name)
        select ${workspaceId}, 'Person ' || i from generate_series(1, ${CONTACTS}) i
        returning id
      )
      insert into contact_identities (workspace_id, contact_id, channel, identifier, identifier_key)
      select ${workspaceId}, id, 'email', id || '@example.com', id || '@example.com' from made`;
    // The stored count an unfiltered page's total reads.
    await sql`
      insert into workspace_counts (workspace_id, contacts) values (${workspaceId}, ${CONTACTS})
      on conflict (workspace_id) do update set contacts = excluded.contacts`;
    return secret;
  } finally {
    await database.close();
  }
}

const REQUESTS: Record<string, string> = {
  '{ version }': '{ version }',
  '{ me }': '{ me { id name role } }',
  'contactPage(limit: 50) + identities + total':
    '{ contactPage(limit: 50) { total items { id name identities { channel identifier } } } }',
};

const db = await scratchDatabase();
try {
  migrate(db.url, root);
  const token = await seed(db.url);
  const results: Record<string, { a: LoadResult[]; b: LoadResult[] }> = {};
  for (let round = 0; round < rounds; round += 1) {
    for (const [side, svcRoot] of [
      ['a', path.resolve(aRoot)],
      ['b', root],
    ] as const) {
      const service = await startServe({ SVC_DATABASE_URL: db.url }, svcRoot);
      try {
        for (const [name, query] of Object.entries(REQUESTS)) {
          const result = await load(name, {
            url: `${service.url}/api/graphql`,
            body: JSON.stringify({ query }),
            headers: { authorization: `Bearer ${token}` },
            connections,
            seconds,
          });
          if (result.errors > 0) throw new Error(`${name}: ${result.errors} errors (${side})`);
          (results[name] ??= { a: [], b: [] })[side].push(result);
        }
      } finally {
        await service.stop();
      }
    }
  }
  console.log(
    `A: ${path.resolve(aRoot)}\nB: ${root}\n${rounds} rounds, ${connections} connections, ${seconds} s each\n`,
  );
  for (const [name, { a, b }] of Object.entries(results)) {
    const rates = (list: LoadResult[]) =>
      list.map((r) => r.requestsPerSecond.toFixed(0)).join(' / ');
    const mean = (list: LoadResult[]) =>
      list.reduce((sum, r) => sum + r.requestsPerSecond, 0) / list.length;
    console.log(
      `${name.padEnd(46)} A ${rates(a).padStart(12)} req/s   B ${rates(b).padStart(12)} req/s   B/A ${(mean(b) / mean(a)).toFixed(2)}`,
    );
  }
} finally {
  await db.drop();
}
