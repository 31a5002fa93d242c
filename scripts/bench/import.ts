// npm run bench, import scenario: a generated CSV of about 5 MiB (50,000 rows with a name,
// an email, a phone and two custom fields) and the same rows as .xlsx, each uploaded,
// mapped and committed through the graph, against a plain COPY of the same rows into the
// same tables in the same run; with the peak RSS of `svc serve`.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as XLSX from 'xlsx';
import { createDatabase } from '../../src/db/client.js';
import { benchAdmin, cpuMicros } from './support.js';

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 50_000);

let run = 0;

/**
 * Fresh rows: each call's phone numbers and addresses differ from the last call's, in
 * their match keys too (a phone's last nine digits, contactDuplicates' key): the second
 * file, imported into the same workspace as the first, would otherwise add 50,000
 * duplicates to that index, which the COPY into a workspace of its own never meets.
 */
function rows(): string[][] {
  run += 1;
  return Array.from({ length: ROWS }, (_, i) => [
    `Imported Person ${String(i).padStart(6, '0')}`,
    `person.${i}.${randomUUID().slice(0, 8)}@example.com`,
    `+1 5${String(run).padStart(2, '0')} ${String(i).padStart(7, '0')}`,
    i % 2 ? 'Gold' : 'Silver',
    `met at fair ${i % 97}`,
  ]);
}

const HEADER = ['name', 'email', 'phone', 'tier', 'notes'];

function csvOf(data: string[][]): Buffer {
  return Buffer.from([HEADER, ...data].map((row) => row.join(',')).join('\n'));
}

function xlsxOf(data: string[][]): Buffer {
  const book = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([HEADER, ...data]), 'Contacts');
  return XLSX.write(book, { type: 'buffer', bookType: 'xlsx', compression: true }) as Buffer;
}

async function post(graph: string, token: string, query: string, variables: object) {
  const response = await fetch(graph, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as {
    data?: Record<string, { id: string }>;
    errors?: unknown;
  };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data!;
}

async function upload(graph: string, token: string, bytes: Buffer, name: string) {
  const form = new FormData();
  const query = 'mutation ($file: Upload!) { importUpload(file: $file) { id rowCount } }';
  form.append('operations', JSON.stringify({ query, variables: { file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', new Blob([bytes as BlobPart]), name);
  const response = await fetch(graph, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const body = (await response.json()) as {
    data?: { importUpload: { id: string; rowCount: number } };
    errors?: unknown;
  };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data!.importUpload;
}

const MAPPING = [
  { column: 0, target: 'name' },
  { column: 1, target: 'identity:email' },
  { column: 2, target: 'identity:phone' },
  { column: 3, target: 'field:tier' },
  { column: 4, target: 'field:remark' },
];

/**
 * CPU time so far of the database's server processes (every backend connected to the
 * bench's database, read from /proc: the server runs on this machine) and of `pids`.
 * A shared machine moves wall time with what else runs; CPU time moves much less.
 */
async function cpuNow(probe: ProbeDb, pids: readonly number[]): Promise<Map<number, number>> {
  const backends = await probe.sql<{ pid: number }[]>`
    select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
  const times = new Map<number, number>();
  for (const pid of [...backends.map((row) => row.pid), ...pids]) {
    try {
      times.set(pid, cpuMicros(pid));
    } catch {
      // gone meanwhile
    }
  }
  return times;
}

/** CPU seconds spent between two `cpuNow` readings (a process new since the first counts whole). */
function cpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let micros = 0;
  const each: number[] = [];
  for (const [pid, time] of after) {
    micros += time - (before.get(pid) ?? 0);
    each.push((time - (before.get(pid) ?? 0)) / 1e6);
  }
  if (process.env.BENCH_CPU_DETAIL) console.error('cpu by process', each.join(' '));
  return micros / 1e6;
}

type ProbeDb = ReturnType<typeof createDatabase>;

/**
 * Before a measured write: the database quiet (no other backend of it active, such as the
 * statistics refresh a commit starts after its answer) and a checkpoint taken, so neither
 * the commits nor COPY pay for another's work: the WAL of 50,000 contacts is about half a
 * checkpoint's distance (max_wal_size 1 GB), and the write a checkpoint starts under pays
 * every page's first full-page image.
 */
async function quiet(probe: ProbeDb): Promise<void> {
  for (;;) {
    const [busy] = await probe.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state = 'active'`;
    if (busy!.n === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await probe.sql`checkpoint`;
}

/** Upload, map and commit one file; answers the seconds each stage took. */
async function importFile(
  graph: string,
  token: string,
  bytes: Buffer,
  name: string,
  cpu: { probe: ProbeDb; pid: number },
) {
  let started = performance.now();
  const staged = await upload(graph, token, bytes, name);
  const stagedSeconds = (performance.now() - started) / 1000;
  // The process's peak so far after each stage: which stage raised it.
  const peakMb = { staged: peakRssMb(cpu.pid), mapped: 0, committed: 0 };
  started = performance.now();
  await post(
    graph,
    token,
    'mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { id } }',
    { id: staged.id, m: MAPPING },
  );
  const mappedSeconds = (performance.now() - started) / 1000;
  peakMb.mapped = peakRssMb(cpu.pid);
  await quiet(cpu.probe);
  const cpuBefore = await cpuNow(cpu.probe, [cpu.pid]);
  started = performance.now();
  await post(graph, token, 'mutation ($id: UUID!) { importCommit(id: $id) { id } }', {
    id: staged.id,
  });
  const committedSeconds = (performance.now() - started) / 1000;
  const committedCpuSeconds = cpuSpent(cpuBefore, await cpuNow(cpu.probe, [cpu.pid]));
  peakMb.committed = peakRssMb(cpu.pid);
  return {
    peakMb,
    rows: staged.rowCount,
    stagedSeconds,
    mappedSeconds,
    committedSeconds,
    committedCpuSeconds,
  };
}

/**
 * The same rows written with COPY into contacts, identities and field values: its seconds,
 * and the CPU seconds of this process and the database's processes meanwhile.
 */
async function copyBaseline(
  databaseUrl: string,
  data: string[][],
  probe: ProbeDb,
): Promise<{ seconds: number; cpuSeconds: number }> {
  const database = createDatabase(databaseUrl, { max: 2 });
  try {
    const { sql } = database;
    const [workspace] = await sql<{ id: string }[]>`
      insert into workspaces (name) values ('COPY baseline') returning id`;
    const workspaceId = workspace!.id;
    const fields = await sql<{ id: string; name: string }[]>`
      insert into field_definitions (workspace_id, name, label, kind, position)
      values (${workspaceId}, 'tier', 'Tier', 'text', 0), (${workspaceId}, 'remark', 'Remark', 'text', 1)
      returning id, name`;
    const fieldId = (name: string) => fields.find((f) => f.name === name)!.id;
    const ids = data.map(() => randomUUID());
    await quiet(probe);
    const cpuBefore = await cpuNow(probe, []);
    const ownBefore = process.cpuUsage();
    const started = performance.now();
    await sql.begin(async (tx) => {
      const copy = async (statement: string, lines: string[]) => {
        const writable = await tx.unsafe(statement).writable();
        for (let i = 0; i < lines.length; i += 5_000) {
          writable.write(lines.slice(i, i + 5_000).join(''));
        }
        await new Promise<void>((resolve, reject) =>
          writable.end((error?: Error | null) => (error ? reject(error) : resolve())),
        );
      };
      await copy(
        'copy contacts (workspace_id, id, name) from stdin',
        data.map((row, i) => `${workspaceId}\t${ids[i]}\t${row[0]}\n`),
      );
      await copy(
        'copy contact_identities (workspace_id, contact_id, channel, identifier, identifier_key) from stdin',
        data.flatMap((row, i) => [
          `${workspaceId}\t${ids[i]}\temail\t${row[1]}\t${row[1]!.toLowerCase()}\n`,
          `${workspaceId}\t${ids[i]}\tphone\t${row[2]}\t+${row[2]!.replace(/\D/g, '')}\n`,
        ]),
      );
      await copy(
        'copy contact_field_values (workspace_id, contact_id, field_id, value) from stdin',
        data.flatMap((row, i) => [
          `${workspaceId}\t${ids[i]}\t${fieldId('tier')}\t"${row[3]}"\n`,
          `${workspaceId}\t${ids[i]}\t${fieldId('remark')}\t"${row[4]}"\n`,
        ]),
      );
      // The workspace's contact count (contactPage.total reads it), as every write keeps it.
      await tx`
        insert into workspace_counts (workspace_id, contacts) values (${workspaceId}, ${data.length})
        on conflict (workspace_id) do update
          set contacts = workspace_counts.contacts + excluded.contacts`;
    });
    const seconds = (performance.now() - started) / 1000;
    const own = process.cpuUsage(ownBefore);
    const cpuSeconds = cpuSpent(cpuBefore, await cpuNow(probe, [])) + (own.user + own.system) / 1e6;
    return { seconds, cpuSeconds };
  } finally {
    await database.close();
  }
}

/** Peak resident memory of a process (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

/** One run of the scenario: COPY's seconds and each file's stages. */
export interface ImportFigures {
  copySeconds: number;
  /** CPU seconds of the COPY: this process's and the database's. */
  copyCpuSeconds: number;
  csv: { bytes: number } & Awaited<ReturnType<typeof importFile>>;
  xlsx: { bytes: number } & Awaited<ReturnType<typeof importFile>>;
}

/** The two custom fields the rows fill, defined in the token's workspace. */
async function defineFields(graph: string, token: string): Promise<void> {
  for (const input of [
    { name: 'tier', label: 'Tier', kind: 'select', options: ['Gold', 'Silver'] },
    { name: 'remark', label: 'Remark', kind: 'text' },
  ]) {
    await post(
      graph,
      token,
      'mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }',
      { input },
    );
  }
}

/**
 * Defines the two fields, imports the CSV and the .xlsx (each into a workspace of its
 * own), then COPYs the same rows into a third.
 */
export async function measureImports(options: {
  databaseUrl: string;
  graph: string;
  token: string;
  /** `svc serve`'s process, whose CPU a commit counts beside the database's. */
  pid: number;
}): Promise<ImportFigures> {
  const probe = createDatabase(options.databaseUrl, { max: 1 });
  try {
    return await measureWith(options, probe);
  } finally {
    await probe.close();
  }
}

async function measureWith(
  options: { databaseUrl: string; graph: string; token: string; pid: number },
  probe: ProbeDb,
): Promise<ImportFigures> {
  const { graph } = options;
  const cpu = { probe, pid: options.pid };
  const csv = csvOf(rows());
  await defineFields(graph, options.token);
  const csvRun = await importFile(graph, options.token, csv, 'contacts.csv', cpu);
  // Each file into a workspace of its own, as the COPY below: a second import into the
  // first's workspace writes into its full part of every index (4-12% dearer in psql for
  // the same COPY), which the baseline would never meet.
  const second = (await benchAdmin(probe.db)).token;
  await defineFields(graph, second);
  const xlsx = xlsxOf(rows());
  const xlsxRun = await importFile(graph, second, xlsx, 'contacts.xlsx', cpu);
  const copy = await copyBaseline(options.databaseUrl, rows(), probe);
  return {
    copySeconds: copy.seconds,
    copyCpuSeconds: copy.cpuSeconds,
    csv: { bytes: csv.length, ...csvRun },
    xlsx: { bytes: xlsx.length, ...xlsxRun },
  };
}

/** A file's line of the report: its size, rows, stages and the commit against COPY. */
export function importLine(
  label: string,
  run: ImportFigures['csv'],
  copy: Pick<ImportFigures, 'copySeconds' | 'copyCpuSeconds'>,
): string {
  return `${label.padEnd(6)} ${(run.bytes / 1024 / 1024).toFixed(2)} MiB, ${run.rows} rows: staged ${run.stagedSeconds.toFixed(2)} s, mapped ${run.mappedSeconds.toFixed(2)} s, committed ${run.committedSeconds.toFixed(2)} s (commit ${(run.committedSeconds / copy.copySeconds).toFixed(2)}× COPY), CPU ${run.committedCpuSeconds.toFixed(2)} s (${(run.committedCpuSeconds / copy.copyCpuSeconds).toFixed(2)}× COPY's); peak RSS after each stage ${run.peakMb.staged.toFixed(0)}·${run.peakMb.mapped.toFixed(0)}·${run.peakMb.committed.toFixed(0)} MB`;
}

/** Runs the scenario and prints its lines. */
export async function importScenario(options: {
  databaseUrl: string;
  graph: string;
  token: string;
  pid: number;
}) {
  const figures = await measureImports(options);
  console.log(
    `\nimport: COPY of the same ${ROWS} rows into the same tables: ${figures.copySeconds.toFixed(2)} s, CPU ${figures.copyCpuSeconds.toFixed(2)} s`,
  );
  console.log(importLine('CSV', figures.csv, figures));
  console.log(importLine('XLSX', figures.xlsx, figures));
  console.log(`svc serve peak RSS through the bench: ${peakRssMb(options.pid).toFixed(0)} MB`);
}
