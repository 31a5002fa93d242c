// A commit whose process dies (issue 26, found on the way): a real `svc serve` is killed
// with SIGKILL in the middle of a commit. Its transaction rolls back and its progress row
// stays behind; the import reads `mapped` (and commits) as soon as PostgreSQL has let the
// dead commit go, not once its progress is a deadline old.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { serveProcesses } from '../../support/cli.js';
import { dataOf } from '../../support/contacts.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { startTestService, type TestService } from '../../support/service.js';
import { holdTable, uploadFile, waiterOn } from './support.js';

let db: TestDatabase;
let svc: TestService;
const serveProcess = serveProcesses();

beforeAll(async () => {
  db = await createTestDatabase();
  svc = await startTestService({ db, plugins: {} });
}, 60_000);

afterAll(async () => {
  await svc.stop();
  await db.drop();
});

const JOB = `query ($id: UUID!) { importJob(id: $id) { state progress { stage done total } } }`;
const COMMIT = `mutation ($id: UUID!) { importCommit(id: $id) { state createdCount } }`;
const ROWS = 3_000;

/** The import as the surviving process reads it. */
async function job(id: string) {
  return dataOf<{ state: string; progress: unknown }>(
    (await svc.graph(JOB, { id })).body,
    'importJob',
  );
}

test('a commit killed with its process leaves the import mapped and committable at once', async () => {
  const csv = ['name,email', ...Array.from({ length: ROWS }, (_, i) => `P${i},p${i}@example.com`)];
  const { id } = dataOf<{ id: string }>(
    (await uploadFile(svc, csv.join('\n'))).body,
    'importUpload',
  );
  dataOf(
    (
      await svc.graph(
        `mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { state } }`,
        {
          id,
          m: [
            { column: 0, target: 'name' },
            { column: 1, target: 'identity:email' },
          ],
        },
      )
    ).body,
    'importSetMapping',
  );

  // The other process commits; it stops where it writes contacts, its progress started.
  const doomed = await serveProcess({ SVC_DATABASE_URL: db.url });
  const lock = holdTable(svc, 'contacts');
  await lock.held;
  void fetch(`${doomed.url}/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...svc.adminHeaders },
    body: JSON.stringify({ query: COMMIT, variables: { id } }),
  }).catch(() => 'the process died');
  await waiterOn(svc, 'contacts');
  expect(await job(id)).toEqual({
    state: 'committing',
    progress: { stage: 'committing', done: 0, total: ROWS },
  });

  const exited = new Promise((resolve) => doomed.child.once('exit', resolve));
  doomed.child.kill('SIGKILL');
  await exited;
  // Its backend learns of the death when it next writes to the socket: after the lock.
  await lock.release();
  const deadline = Date.now() + 10_000;
  let seen = await job(id);
  while (seen.state === 'committing' && Date.now() < deadline) seen = await job(id);
  // The progress row the dead process left is still there, a second old at most.
  const [left] = await svc.db.database.sql<{ n: number }[]>`
    select count(*)::int as n from import_progress where import_id = ${id}`;
  expect(left!.n).toBe(1);
  expect(seen).toEqual({ state: 'mapped', progress: null });

  expect(dataOf((await svc.graph(COMMIT, { id })).body, 'importCommit')).toEqual({
    state: 'committed',
    createdCount: ROWS,
  });
  expect(await job(id)).toEqual({ state: 'committed', progress: null });
}, 60_000);
