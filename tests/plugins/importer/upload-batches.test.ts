// An upload holds at most one batch of the file's rows in the serving process (issue 29,
// goal 6): the parser's worker hands the rows back a batch at a time, each asked for only
// once the last one is stored, each within its bound (tests/workers/run.test.ts holds the
// protocol to that); here, the importer takes them one by one and stores each before the
// next arrives.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { workerBatch } from '../../../src/workers/run.js';
import { dataOf } from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { uploadFile } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
  // Every step of the staging's progress (the table keeps only the last, then none).
  await svc.db.database.sql.unsafe(`
    create table staging_seen (import_id uuid, done int);
    create function staging_seen() returns trigger language plpgsql as $$
    begin
      insert into staging_seen (import_id, done) values (new.import_id, new.done);
      return new;
    end $$;
    create trigger staging_seen after insert or update on import_progress
      for each row when (new.stage = 'staging') execute function staging_seen();`);
});

afterAll(() => svc.stop());

const ROWS = 5_000;
/** PARSE_LIMITS.batchRows, and the worker's bound on one batch (WORKER_LIMITS). */
const BATCH_ROWS = 2_000;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

test('the rows arrive in bounded batches, each stored before the next is asked for', async () => {
  const csv = [
    'name,email',
    ...Array.from({ length: ROWS }, (_, i) => `Person ${i},batch.${i}@example.com`),
  ].join('\n');
  const delivered: { bytes: number; storedBefore: Promise<number> }[] = [];
  // What the import's progress (committed after each batch is stored) says when a batch
  // arrives: a reading started then sees at least what was stored before.
  const storedSoFar = async () => {
    const [row] = await svc.db.database.sql<{ done: number }[]>`
      select coalesce(max(done), 0)::int as done from staging_seen`;
    return row!.done;
  };
  const onBatch = (message: unknown) => {
    const { file, bytes } = message as { file: string; bytes: number };
    if (file.endsWith('/parse.worker.mjs')) delivered.push({ bytes, storedBefore: storedSoFar() });
  };
  workerBatch.subscribe(onBatch);
  let body;
  try {
    ({ body } = await uploadFile(svc, csv, 'batches.csv', svc.adminHeaders, UPLOAD));
  } finally {
    workerBatch.unsubscribe(onBatch);
  }
  expect(dataOf(body, 'importUpload')).toMatchObject({ state: 'staged', rowCount: ROWS });
  // The file's description, then 2,000 + 2,000 + 1,000 rows.
  const batches = Math.ceil(ROWS / BATCH_ROWS);
  expect(delivered).toHaveLength(1 + batches);
  for (const { bytes } of delivered) expect(bytes).toBeLessThanOrEqual(MAX_BATCH_BYTES);
  const stored = await Promise.all(delivered.map((batch) => batch.storedBefore));
  // Batch k (after the description) arrives once the k - 1 before it are stored.
  stored.slice(1).forEach((done, k) => expect(done).toBeGreaterThanOrEqual(k * BATCH_ROWS));
});

const UPLOAD = 'mutation ($file: Upload!) { importUpload(file: $file) { state rowCount } }';
