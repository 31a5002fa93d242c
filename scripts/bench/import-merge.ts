// npx tsx scripts/bench/import-merge.ts: a 50,000-row import of which half the rows carry
// an address an existing contact holds, committed plainly (those rows skipped as
// identity_taken_by) and with `existingContacts: MERGE` (those rows merged), each through
// the graph of a fresh `svc serve`; with a fresh 50,000-row file for scale.
// BENCH_IMPORT_MERGE=0 runs the plain commits only (for code without the option);
// BENCH_ROUNDS=n alternates plain and merging commits n times.
import { randomUUID } from 'node:crypto';
import { createDatabase } from '../../src/db/client.js';
import { peakRssMb } from './import.js';
import { benchAdmin, scratchDatabase, startServe } from './support.js';

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 50_000);
const MERGE = process.env.BENCH_IMPORT_MERGE !== '0';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const HEADER = 'name,email,phone,tier';

async function post<T>(graph: string, token: string, query: string, variables: object) {
  const response = await fetch(graph, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: T; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data!;
}

async function upload(graph: string, token: string, csv: string): Promise<string> {
  const form = new FormData();
  const query = 'mutation ($file: Upload!) { importUpload(file: $file) { id } }';
  form.append('operations', JSON.stringify({ query, variables: { file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', new Blob([csv]), 'contacts.csv');
  const response = await fetch(graph, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const body = (await response.json()) as { data?: { importUpload: { id: string } } };
  if (!body.data) throw new Error(JSON.stringify(body));
  return body.data.importUpload.id;
}

const MAPPING = [
  { column: 0, target: 'name' },
  { column: 1, target: 'identity:email' },
  { column: 2, target: 'identity:phone' },
  { column: 3, target: 'field:tier' },
];

/** Uploads, maps and commits `lines`; answers the commit's seconds and its counts. */
async function importLines(graph: string, token: string, lines: string[], merge: boolean) {
  const id = await upload(graph, token, [HEADER, ...lines].join('\n'));
  const args = merge ? ', existingContacts: MERGE' : '';
  await post(
    graph,
    token,
    `mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m${args}) { id } }`,
    { id, m: MAPPING },
  );
  const started = performance.now();
  const counts = merge ? 'createdCount skippedCount mergedCount' : 'createdCount skippedCount';
  const done = await post<{ importCommit: Record<string, number> }>(
    graph,
    token,
    `mutation ($id: UUID!) { importCommit(id: $id) { ${counts} } }`,
    { id },
  );
  return { seconds: (performance.now() - started) / 1000, counts: done.importCommit };
}

let phones = 0;
/** `count` rows, with fresh phones; their emails `email(i)`, tier left blank when asked. */
function lines(count: number, email: (i: number) => string, tier = true): string[] {
  return Array.from({ length: count }, (_, i) => {
    phones += 1;
    return `Person ${i},${email(i)},+1 555 ${String(phones).padStart(8, '0')},${tier ? (i % 2 ? 'Gold' : 'Silver') : ''}`;
  });
}

const fresh = () => {
  const run = randomUUID().slice(0, 8);
  return (i: number) => `p${i}.${run}@example.com`;
};

const db = await scratchDatabase();
try {
  const service = await startServe({ SVC_DATABASE_URL: db.url });
  try {
    const database = createDatabase(db.url, { max: 2 });
    const { token } = await benchAdmin(database.db);
    await database.close();
    const graph = `${service.url}/api/graphql`;
    await post(graph, token, 'mutation ($i: FieldDefineInput!) { defineField(input: $i) { id } }', {
      i: { name: 'tier', label: 'Tier', kind: 'select', options: ['Gold', 'Silver'] },
    });
    const half = ROWS / 2;
    // The existing contacts: half a file, no tier (so a merge fills it).
    const seeded = fresh();
    const seed = await importLines(graph, token, lines(half, seeded, false), false);
    console.log(`seed: ${half} contacts committed in ${seed.seconds.toFixed(2)} s`);
    const plainFresh = await importLines(graph, token, lines(ROWS, fresh()), false);
    console.log(
      `plain commit, ${ROWS} fresh rows: ${plainFresh.seconds.toFixed(2)} s ${JSON.stringify(plainFresh.counts)}`,
    );
    const halfTaken = () => [...lines(half, seeded), ...lines(half, fresh())];
    // Plain and merging commits alternate, so a busy machine slows both alike.
    for (let round = 1; round <= ROUNDS; round += 1) {
      const plain = await importLines(graph, token, halfTaken(), false);
      console.log(
        `round ${round}: plain commit, ${ROWS} rows, half held: ${plain.seconds.toFixed(2)} s ${JSON.stringify(plain.counts)}`,
      );
      if (!MERGE) continue;
      const merged = await importLines(graph, token, halfTaken(), true);
      console.log(
        `round ${round}: MERGE commit, ${ROWS} rows, half held: ${merged.seconds.toFixed(2)} s ${JSON.stringify(merged.counts)}`,
      );
    }
    console.log(`svc serve peak RSS: ${peakRssMb(service.child.pid!).toFixed(0)} MB`);
  } finally {
    await service.stop();
  }
} finally {
  await db.drop();
}
