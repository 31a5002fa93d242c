// npm run bench:import: the import scenario of scripts/bench/import.ts (50,000 rows as CSV
// and as .xlsx, uploaded, mapped and committed through the graph, then COPY of the same
// rows into the same tables) against a fresh `svc serve` on a fresh database, with that
// process's peak RSS through it. BENCH_SVC_ROOT names another checkout (an earlier
// commit) measured in the same run, before and after alternating BENCH_ROUNDS times
// (default 1), each against the COPY of its own database.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDatabase } from '../../src/db/client.js';
import { importLine, measureImports, peakRssMb } from './import.js';
import { benchAdmin, scratchDatabase, startServe } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const roots = [
  ...(process.env.BENCH_SVC_ROOT
    ? [{ label: `before (${process.env.BENCH_SVC_ROOT})`, root: process.env.BENCH_SVC_ROOT }]
    : []),
  { label: 'this checkout', root: here },
];

async function tokenFor(databaseUrl: string): Promise<string> {
  const database = createDatabase(databaseUrl, { max: 2 });
  try {
    return (await benchAdmin(database.db)).token;
  } finally {
    await database.close();
  }
}

for (let round = 1; round <= ROUNDS; round += 1) {
  // Alternate which goes first, so a machine growing busier slows both alike.
  const order = round % 2 === 1 ? roots : [...roots].reverse();
  for (const { label, root } of order) {
    const db = await scratchDatabase();
    try {
      const service = await startServe({ SVC_DATABASE_URL: db.url }, root);
      try {
        const token = await tokenFor(db.url);
        const graph = `${service.url}/api/graphql`;
        const figures = await measureImports({
          databaseUrl: db.url,
          graph,
          token,
          pid: service.child.pid!,
        });
        console.log(
          `\nround ${round}, ${label}: COPY ${figures.copySeconds.toFixed(2)} s, CPU ${figures.copyCpuSeconds.toFixed(2)} s`,
        );
        console.log(importLine('CSV', figures.csv, figures));
        console.log(importLine('XLSX', figures.xlsx, figures));
        console.log(`svc serve peak RSS: ${peakRssMb(service.child.pid!).toFixed(0)} MB`);
      } finally {
        await service.stop();
      }
    } finally {
      await db.drop();
    }
  }
}
