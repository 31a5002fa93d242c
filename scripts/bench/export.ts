// npm run bench:export: exportContacts at scale, CSV then .xlsx, through `svc serve`.
//  - seeds a scratch database as bench:scale does (BENCH_CONTACTS contacts, default
//    1,000,000, each with an email and a phone; no tasks) and gives every contact two
//    custom field values (`tier`, a select, and `score`, a number);
//  - starts each export with the graph and downloads its file over HTTP, reading it as it
//    arrives; prints contacts, bytes, seconds, rows/s and the serving process's peak RSS
//    during that download (VmRSS sampled every 50 ms; VmHWM before and after).
// BENCH_KEEP=1 keeps the database, BENCH_DATABASE reuses one kept earlier;
// BENCH_NODE_OPTIONS is passed to `svc serve` as NODE_OPTIONS (support.ts).
import { readFileSync } from 'node:fs';
import postgres from 'postgres';
import { buildCatalogue } from '../../src/auth/access.js';
import { createApiToken } from '../../src/auth/tokens.js';
import { createDatabase, withDatabaseName } from '../../src/db/client.js';
import { migrate, seed } from './scale-data.js';
import { adminUrl, scratchDatabase, startServe } from './support.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);

function status(pid: number, key: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith(key)) ?? '';
  return Number(/(\d+) kB/.exec(line)?.[1] ?? 0) / 1024;
}

const kept = process.env.BENCH_DATABASE;
const db = kept
  ? { name: kept, url: withDatabaseName(adminUrl, kept), drop: async () => {} }
  : await scratchDatabase();
try {
  migrate(db.url);
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  let workspaceId: string;
  let userId: string;
  if (kept) {
    const [row] = await sql<{ workspace_id: string; user_id: string }[]>`
      select w.id as workspace_id, u.id as user_id from workspaces w
      join users u on u.workspace_id = w.id and u.email = 'user0@example.com'
      where w.name = 'Scale'`;
    if (!row) throw new Error(`${db.url} holds no seeded Scale workspace`);
    ({ workspace_id: workspaceId, user_id: userId } = row);
  } else {
    const seeded = await seed(db.url, { contacts: CONTACTS, tasks: 0 });
    workspaceId = seeded.workspaceId;
    userId = seeded.userIds[0]!;
    const started = performance.now();
    const [tier] = await sql<{ id: string }[]>`insert into field_definitions
      (workspace_id, name, label, kind, settings, position)
      values (${workspaceId}, 'tier', 'Tier', 'select', ${sql.json({ options: ['Gold', 'Silver'] })}, 0)
      returning id`;
    const [score] = await sql<{ id: string }[]>`insert into field_definitions
      (workspace_id, name, label, kind, settings, position)
      values (${workspaceId}, 'score', 'Score', 'number', '{}', 1) returning id`;
    await sql`insert into contact_field_values (workspace_id, contact_id, field_id, value)
      select workspace_id, id, ${tier!.id}, to_jsonb(case when random() < 0.5 then 'Gold' else 'Silver' end)
      from contacts where workspace_id = ${workspaceId}`;
    await sql`insert into contact_field_values (workspace_id, contact_id, field_id, value)
      select workspace_id, id, ${score!.id}, to_jsonb((floor(random() * 2000) - 1000)::text)
      from contacts where workspace_id = ${workspaceId}`;
    await sql`vacuum analyze contact_field_values`;
    console.log(`field values: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  await sql.end();

  const database = createDatabase(db.url, { max: 1 });
  const { secret } = await createApiToken(database.db, buildCatalogue([]), {
    workspaceId,
    userId,
    name: 'export bench',
    scopes: null,
    ttlDays: null,
  });
  await database.close();

  // BENCH_NODE_OPTIONS (`--max-old-space-size=128`) shows the export fits a small heap.
  const service = await startServe({ SVC_DATABASE_URL: db.url, SVC_STREAM_LIFETIME: '30m' });
  const pid = service.child.pid!;
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  try {
    console.log(`svc serve idle: VmRSS ${status(pid, 'VmRSS:').toFixed(0)} MB`);
    for (const format of ['CSV', 'XLSX']) {
      const response = await fetch(`${service.url}/api/graphql`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          query: `mutation ($format: ImporterExportFormat!) {
            exportContacts(format: $format) { url contactCount } }`,
          variables: { format },
        }),
      });
      const body = (await response.json()) as {
        data?: { exportContacts: { url: string; contactCount: number } };
        errors?: unknown;
      };
      if (!body.data) throw new Error(JSON.stringify(body.errors));
      const { url, contactCount } = body.data.exportContacts;
      let peak = status(pid, 'VmRSS:');
      const sampler = setInterval(() => (peak = Math.max(peak, status(pid, 'VmRSS:'))), 50);
      const started = performance.now();
      const file = await fetch(`${service.url}${url}`, { headers });
      let bytes = 0;
      const reader = file.body!.getReader();
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        bytes += read.value.byteLength;
      }
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      console.log(
        `${format}: ${contactCount} contacts, ${(bytes / 1024 / 1024).toFixed(1)} MiB in ` +
          `${seconds.toFixed(1)} s = ${Math.round(contactCount / seconds)} rows/s; ` +
          `peak VmRSS ${peak.toFixed(0)} MB (VmHWM ${status(pid, 'VmHWM:').toFixed(0)} MB)`,
      );
    }
  } finally {
    await service.stop();
  }
} finally {
  if (!process.env.BENCH_KEEP && !kept) await db.drop();
  else console.log(`kept database ${db.name}`);
}
