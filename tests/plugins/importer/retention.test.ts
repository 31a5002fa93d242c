// How long imports are kept (docs/importer.md): an import not committed within a week goes
// with its staged rows, a committed one keeps its record and loses its rows 30 days after
// the commit; an import under work is never swept under it. Swept by housekeeping.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { runHousekeeping } from '../../../src/auth/housekeeping.js';
import { dataOf, expectReason, freshWorkspaceHeaders } from '../../support/contacts.js';
import {
  captureLogger,
  startTestService,
  testConfig,
  type TestService,
} from '../../support/service.js';
import { uploadFile } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

const MAP = `mutation ($id: UUID!, $mapping: [ImportColumnInput!]!) {
  importSetMapping(id: $id, mapping: $mapping) { state }
}`;
const COMMIT = `mutation ($id: UUID!) { importCommit(id: $id) { state createdCount } }`;
const JOB = `query ($id: UUID!) {
  importJob(id: $id) { state rowCount createdCount rows(first: 200) { line } }
}`;
const MAPPING = [
  { column: 0, target: 'name' },
  { column: 1, target: 'identity:email' },
];

function csv(rows: number, tag: string): string {
  const lines = ['name,email'];
  for (let n = 0; n < rows; n++) lines.push(`Person ${tag}${n},p${n}.${tag}@example.com`);
  return lines.join('\n');
}

let uploads = 0;

/** An import of `rows` rows, uploaded, then mapped and committed as `to` says. */
async function importIn(
  headers: Record<string, string>,
  to: 'staged' | 'mapped' | 'committed',
  rows = 3,
): Promise<string> {
  const tag = `u${(uploads += 1)}`;
  const { body } = await uploadFile(svc, csv(rows, tag), 'c.csv', headers);
  const id = dataOf<{ id: string }>(body, 'importUpload').id;
  if (to !== 'staged')
    dataOf((await svc.graph(MAP, { id, mapping: MAPPING }, headers)).body, 'importSetMapping');
  if (to === 'committed') dataOf((await svc.graph(COMMIT, { id }, headers)).body, 'importCommit');
  return id;
}

/** Moves an import's upload (and commit) back in time. */
async function age(id: string, uploadedDaysAgo: number, committedDaysAgo?: number) {
  await svc.db.database.sql`
    update imports set created_at = now() - ${uploadedDaysAgo} * interval '1 day',
      committed_at = case when committed_at is null then null
        else now() - ${committedDaysAgo ?? 0} * interval '1 day' end
    where id = ${id}`;
}

async function stagedRows(id: string): Promise<number> {
  const [row] = await svc.db.database.sql<{ n: number }[]>`
    select count(*)::int as n from import_rows where import_id = ${id}`;
  return row!.n;
}

/** One round of housekeeping with the service's plugins; no sweep may fail. */
async function housekeeping(): Promise<Record<string, number>> {
  const { log, lines } = captureLogger();
  const removed = await runHousekeeping({
    config: testConfig(),
    database: svc.service.database,
    log,
    plugins: svc.service.plugins,
  });
  expect(lines.filter((line) => line.level === 'warn')).toEqual([]);
  return removed;
}

describe('uncommitted imports', () => {
  test('go with their rows a week after the upload; younger and committed ones stay', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const oldStaged = await importIn(headers, 'staged');
    const oldMapped = await importIn(headers, 'mapped');
    const young = await importIn(headers, 'mapped');
    const committed = await importIn(headers, 'committed');
    await age(oldStaged, 8);
    await age(oldMapped, 8);
    await age(young, 6);
    await age(committed, 8, 1);

    const removed = await housekeeping();

    // Two imports and their three rows each.
    expect(removed['importer: uncommitted imports']).toBeGreaterThanOrEqual(8);
    for (const id of [oldStaged, oldMapped]) {
      expectReason((await svc.graph(JOB, { id }, headers)).body, 'NOT_FOUND', 'import_not_found');
      expect(await stagedRows(id)).toBe(0);
    }
    const kept = dataOf<{ state: string; rows: unknown[] }>(
      (await svc.graph(JOB, { id: young }, headers)).body,
      'importJob',
    );
    expect(kept).toMatchObject({ state: 'mapped' });
    expect(kept.rows).toHaveLength(3);
    expect(await stagedRows(committed)).toBe(3);
  });

  test('an import under work is skipped, and goes once the work has ended', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const id = await importIn(headers, 'mapped');
    await age(id, 8);
    // A commit (or a mapping) holds the import's row this way for its transaction.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const held = new Promise<void>((resolve) => (locked = resolve));
    const work = svc.db.database.sql.begin(async (tx) => {
      await tx`select 1 from imports where id = ${id} for no key update`;
      locked();
      await released;
    });
    await held;

    await housekeeping();
    const [during] = await svc.db.database.sql`select state from imports where id = ${id}`;
    expect(during?.state).toBe('mapped');
    expect(await stagedRows(id)).toBe(3);

    release();
    await work;
    await housekeeping();
    expect(await svc.db.database.sql`select 1 from imports where id = ${id}`).toHaveLength(0);
  });

  test('a large import goes in rounds, every row counted', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const id = await importIn(headers, 'staged', 2500);
    await age(id, 8);

    const removed = await housekeeping();

    expect(removed['importer: uncommitted imports']).toBeGreaterThanOrEqual(2501);
    expect(await stagedRows(id)).toBe(0);
  });
});

describe('committed imports', () => {
  test('keep their record and counts, and lose their rows 30 days after the commit', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const old = await importIn(headers, 'committed');
    const recent = await importIn(headers, 'committed');
    await age(old, 40, 31);
    await age(recent, 40, 29);

    const removed = await housekeeping();

    expect(removed['importer: committed rows']).toBeGreaterThanOrEqual(3);
    const job = dataOf<{ state: string; rowCount: number; createdCount: number; rows: unknown[] }>(
      (await svc.graph(JOB, { id: old }, headers)).body,
      'importJob',
    );
    expect(job).toEqual({ state: 'committed', rowCount: 3, createdCount: 3, rows: [] });
    expect(await stagedRows(recent)).toBe(3);
  });
});
