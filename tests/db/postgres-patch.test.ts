import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { repoRoot } from '../support/env.js';
import { startPrivateCluster, type PrivateCluster } from '../support/pg-cluster.js';

// patches/postgres+3.4.9.patch (porsager/postgres #1154, #1208): a backend that dies
// under a reserved or pooled connection ends the caller's statement CONNECTION_CLOSED and
// leaves the process, and the pool, alive. Unpatched, the process exits with
// "Cannot read properties of null (reading 'write')" from an immediate.
const scenario = path.join(repoRoot, 'tests/fixtures/postgres-kill/scenario.mjs');
const proxied = path.join(repoRoot, 'tests/fixtures/postgres-proxy/scenario.mjs');
const failedMidway = path.join(repoRoot, 'tests/fixtures/postgres-rows/scenario.mjs');

let cluster: PrivateCluster;

beforeAll(async () => {
  cluster = await startPrivateCluster();
}, 60_000);

afterAll(() => cluster?.destroy());

function runScenario(build: 'esm' | 'cjs', script = scenario) {
  const child = spawn(process.execPath, [script, cluster.url, build], { cwd: repoRoot });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
}

describe('postgres.js with a backend killed under it', () => {
  test.each(['esm', 'cjs'] as const)(
    '%s build: the process lives, callers get CONNECTION_CLOSED, the pool recovers',
    async (build) => {
      const { code, stdout, stderr } = await runScenario(build);
      expect(stderr).not.toMatch(/reading 'write'/);
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual({
        build,
        reservedInFlight: 'CONNECTION_CLOSED',
        reservedAfter: 'CONNECTION_CLOSED',
        poolAfterReserved: 'resolved',
        transaction: 'CONNECTION_CLOSED',
        pooled: 'CONNECTION_CLOSED',
        poolAfterPooled: 'resolved',
      });
    },
    60_000,
  );
});

// The same patch: a connection cut while it fetches its array types fails the statement
// that opened it, a cancel request that cannot reach the server says so to its caller, and
// a LISTEN connection back from an outage listens again once a channel.
// Unpatched (with the failover part), each left a rejection nobody heard: a `svc serve`
// ended with exit code 1 when PostgreSQL stopped under load, or when a request gave up on
// a statement while the server refused new connections.
describe('postgres.js behind a proxy that cuts and refuses connections', () => {
  test.each(['esm', 'cjs'] as const)(
    '%s build: every failure reaches a caller, none is left unheard',
    async (build) => {
      const { code, stdout, stderr } = await runScenario(build, proxied);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(stdout)).toEqual({
        build,
        cutWhileFetchingTypes: 'CONNECTION_CLOSED',
        poolAfterCut: 'resolved',
        cancelRefused: 'ECONNRESET',
        refusedConnections: 1,
        runningAfterRefusal: 1,
        statement: '57014',
        listensAfterOutage: { first: 2, second: 2 },
        unhandled: [],
      });
    },
    60_000,
  );
});

// The same patch (porsager/postgres #1119, #1181): a statement that fails after PostgreSQL
// sent some of its rows leaves the connection as it found it. Unpatched, the next
// statement resolved a sparse array (3 holes, then its 5 rows: a job runner's claim read
// `undefined` as a job), and after a backend terminated mid-statement the next
// connection's first statement failed with the dead one's 57P01.
describe('postgres.js after a statement that failed midway through its rows', () => {
  test.each(['esm', 'cjs'] as const)(
    "%s build: the next statement's rows are its own",
    async (build) => {
      const { code, stdout, stderr } = await runScenario(build, failedMidway);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const next = { length: 5, holes: 0, count: 5 };
      expect(JSON.parse(stdout)).toEqual({
        build,
        plain: { failed: '22012', next },
        prepared: { failed: '22012', next },
        pipelined: { failed: '22012', next },
        terminated: { failed: 'CONNECTION_CLOSED', next },
      });
    },
    60_000,
  );
});
