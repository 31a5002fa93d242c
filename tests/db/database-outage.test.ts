import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import postgres from 'postgres';
import { createDatabase } from '../../src/db/client.js';
import { runSvc, serveProcesses, type ServedProcess } from '../support/cli.js';
import { bearerFor, createUser, createWorkspace } from '../support/factories.js';
import { startPrivateCluster, waitFor, type PrivateCluster } from '../support/pg-cluster.js';

// PostgreSQL going away under a real `svc serve` (issue 26): a private cluster, since a
// crash of the shared server would reset every other test's connections.
const serve = serveProcesses();
let cluster: PrivateCluster;
let served: ServedProcess;
let headers: Record<string, string>;
let exited: number | null = null;
let output = '';

beforeAll(async () => {
  cluster = await startPrivateCluster();
  const migrated = await runSvc(['migrate'], { SVC_DATABASE_URL: cluster.url });
  expect(migrated.code).toBe(0);
  const database = createDatabase(cluster.url, { max: 1 });
  try {
    const workspace = await createWorkspace(database.db);
    const user = await createUser(database.db, workspace);
    headers = { ...(await bearerFor(database.db, user)), 'content-type': 'application/json' };
  } finally {
    await database.close();
  }
  served = await serve({ SVC_DATABASE_URL: cluster.url });
  served.child.once('exit', (code) => (exited = code));
  // Kept so that, should the process end, the failure shows why.
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
  served.child.stdout.on('data', keep);
  served.child.stderr.on('data', keep);
}, 120_000);

afterAll(() => cluster?.destroy());

async function graph(query: string) {
  const response = await fetch(`${served.url}/api/graphql`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** One readiness poll: its status and how long it took to answer. */
async function readyz(): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  try {
    const response = await fetch(`${served.url}/api/readyz`, {
      signal: AbortSignal.timeout(5_000),
    });
    await response.arrayBuffer();
    return { status: response.status, ms: performance.now() - started };
  } catch {
    // No answer in 5 s: status 0.
    return { status: 0, ms: performance.now() - started };
  }
}

/** Whether the service's LISTEN connection has listened since the server last started. */
async function listening(): Promise<boolean> {
  const probe = postgres(cluster.url, { max: 1, onnotice: () => {} });
  try {
    const rows = await probe`
      select 1 from pg_stat_activity
      where application_name = 'svc' and query ilike 'listen %' and state = 'idle'`;
    return rows.length > 0;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 });
  }
}

/** Contacts created back to back until `stop`, as the write load the crash lands on. */
function writeLoad(stop: () => boolean): Promise<void> {
  const writer = async () => {
    while (!stop()) {
      await graph(`mutation { createContact(input: { name: "load" }) { id } }`).catch(() => {});
    }
  };
  return Promise.all([writer(), writer(), writer(), writer()]).then(() => {});
}

describe('svc serve while PostgreSQL is down', () => {
  test.each([
    ['the postmaster SIGKILLed', () => cluster.killPostmaster()],
    ['pg_ctl stop -m immediate', () => cluster.stop('immediate')],
  ])(
    '%s under write load: the process lives, callers are answered UNAVAILABLE, readyz answers 503 within a second, the listener is back within seconds',
    async (_how, crash) => {
      expect((await graph('{ contacts(first: 1) { pageInfo { hasNextPage } } }')).status).toBe(200);
      await waitFor('the LISTEN connection', listening);
      let stopped = false;
      const load = writeLoad(() => stopped);
      // Let the load reach the database first.
      await graph(`mutation { createContact(input: { name: "before" }) { id } }`);
      await crash();

      const polls = [];
      for (let i = 0; i < 6; i += 1) polls.push(await readyz());
      const asked = performance.now();
      const answer = await graph('{ contacts(first: 1) { pageInfo { hasNextPage } } }').catch(
        () => ({
          status: 0,
          headers: new Headers(),
          body: 'no answer in 10 s',
        }),
      );
      const answerMs = performance.now() - asked;
      stopped = true;
      await load;
      // Unpatched postgres.js (patches/README.md) ended the process here.
      expect({ exited, output: exited === null ? '' : output }).toEqual({
        exited: null,
        output: '',
      });

      await cluster.start();
      const restarted = performance.now();
      await waitFor('the LISTEN connection again', listening, 20_000);
      const listenerBackMs = performance.now() - restarted;
      await waitFor('readiness again', async () => (await readyz()).status === 200);

      expect(polls.map((poll) => poll.status)).toEqual([503, 503, 503, 503, 503, 503]);
      expect(Math.max(...polls.map((poll) => poll.ms))).toBeLessThan(1000);
      expect(answer.status).toBe(503);
      // One reconnect delay (at most 1 s) and a refused connection, not a hang.
      expect(answerMs).toBeLessThan(3000);
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.body).toEqual({
        data: null,
        errors: [
          expect.objectContaining({
            message: 'the database is unavailable; try again in 1 second',
            extensions: {
              code: 'UNAVAILABLE',
              reason: 'database_unavailable',
              meta: { retryAfter: 1 },
            },
          }),
        ],
      });
      expect(listenerBackMs).toBeLessThan(5000);
      expect((await graph('{ contacts(first: 1) { pageInfo { hasNextPage } } }')).status).toBe(200);
    },
    90_000,
  );
});
