// The one job runner (src/jobs): a kind defined as a plugin defines one (defineJob,
// enqueueJob through the SDK), run against the real database: enqueued in a transaction,
// woken by its commit, retried after a failure, retried after a dead runner's lease, held
// to its concurrency, and fair across workspaces.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { defineJob, enqueueJob, JobRetry, workspaceShare } from '../../src/plugin-sdk/index.js';
import { claimJobs, startJobRunner, type JobRunner } from '../../src/jobs/runner.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';
import { captureLogger, testConfig } from '../support/service.js';

let db: TestDatabase;
const runners: JobRunner[] = [];
const { log } = captureLogger();

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(runners.map((runner) => runner.stop()));
  await db.drop();
});

async function run(
  kind: Parameters<typeof startJobRunner>[0],
  env: Record<string, string> = {},
  options: { settleIntervalMs?: number; claimIntervalMs?: number } = {},
): Promise<JobRunner> {
  const runner = startJobRunner(kind, {
    database: db.database,
    config: testConfig(env),
    log,
    pollMs: 3_600_000,
    ...options,
  });
  runners.push(runner);
  // With the poll an hour away, only the LISTEN wakes it: be sure it is up.
  expect(await runner.listening).toBe(true);
  return runner;
}

/** Resolves when `check` holds, polling the database every 20 ms for at most 10 s. */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('never happened');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function jobRow(id: string) {
  const [row] = await db.database.sql<
    { status: string; attempts: number; last_error: string | null; due_in: number }[]
  >`select status, attempts, last_error, extract(epoch from run_at - now())::float8 as due_in
    from jobs where id = ${id}`;
  return row;
}

test('a plugin-defined kind runs once its enqueuing transaction commits, and its row goes', async () => {
  const seen: unknown[] = [];
  const kind = defineJob<{ n: number }>({
    kind: 'test.echo',
    run: async (job) => {
      seen.push(job.payload);
    },
  });
  await run(kind);
  const workspace = await createWorkspace(db.database.db);
  const id = await db.database.db.transaction((tx) =>
    enqueueJob(tx, kind, { workspaceId: workspace.id, payload: { n: 7 } }),
  );
  await until(async () => (await jobRow(id)) === undefined);
  expect(seen).toEqual([{ n: 7 }]);
});

test('a failed attempt is recorded and retried after its wait; the next attempt succeeds', async () => {
  let calls = 0;
  const kind = defineJob<null>({
    kind: 'test.flaky',
    retryDelayMs: () => 60_000,
    run: async () => {
      calls += 1;
      if (calls === 1) throw new JobRetry('platform said 503');
    },
  });
  const runner = await run(kind);
  const workspace = await createWorkspace(db.database.db);
  const id = await db.database.db.transaction((tx) =>
    enqueueJob(tx, kind, { workspaceId: workspace.id, payload: null }),
  );
  await until(async () => (await jobRow(id))?.last_error === 'platform said 503');
  const failed = await jobRow(id);
  expect(failed).toMatchObject({ status: 'pending', attempts: 1 });
  expect(failed!.due_in).toBeGreaterThan(50);
  await db.database.sql`update jobs set run_at = now() where id = ${id}`;
  runner.wake();
  await until(async () => (await jobRow(id)) === undefined);
  expect(calls).toBe(2);
});

test('a job whose runner died mid-attempt runs again once the lease has run out', async () => {
  const kind = defineJob<null>({ kind: 'test.lease', leaseMs: 60_000, run: async () => {} });
  const workspace = await createWorkspace(db.database.db);
  const id = await db.database.db.transaction((tx) =>
    enqueueJob(tx, kind, { workspaceId: workspace.id, payload: null }),
  );
  // A runner that claims and then "dies": nothing ever writes its outcome.
  const [claimed] = await claimJobs(db.database.db, kind.storage, {
    limit: 1,
    leaseMs: 60_000,
    perWorkspace: 1,
    running: new Map(),
  });
  expect(claimed?.id).toBe(id);
  const runner = await run(kind);
  runner.wake();
  expect((await jobRow(id))?.due_in).toBeGreaterThan(50); // leased: not taken again
  await db.database.sql`update jobs set run_at = now() where id = ${id}`; // the lease runs out
  runner.wake();
  await until(async () => (await jobRow(id)) === undefined);
});

test('at most SVC_JOBS_CONCURRENCY run at once, and one workspace never takes every slot', async () => {
  const release: (() => void)[] = [];
  const running = new Map<string, number>();
  let peak = 0;
  const kind = defineJob<{ workspace: string }>({
    kind: 'test.slow',
    run: (job) =>
      new Promise<void>((resolve) => {
        running.set(job.workspaceId, (running.get(job.workspaceId) ?? 0) + 1);
        peak = Math.max(
          peak,
          [...running.values()].reduce((a, b) => a + b, 0),
        );
        release.push(() => {
          running.set(job.workspaceId, running.get(job.workspaceId)! - 1);
          resolve();
        });
      }),
  });
  const a = await createWorkspace(db.database.db);
  const b = await createWorkspace(db.database.db);
  await run(kind, { SVC_JOBS_CONCURRENCY: '4' });
  for (let i = 0; i < 8; i += 1) {
    await db.database.db.transaction((tx) =>
      enqueueJob(tx, kind, { workspaceId: a.id, payload: { workspace: 'a' } }),
    );
  }
  await until(async () => (running.get(a.id) ?? 0) === workspaceShare(4));
  // A holds its share (3 of 4); B's job takes the slot left, at once.
  await db.database.db.transaction((tx) =>
    enqueueJob(tx, kind, { workspaceId: b.id, payload: { workspace: 'b' } }),
  );
  await until(async () => (running.get(b.id) ?? 0) === 1);
  expect(running.get(a.id)).toBe(3);
  // Everything drains (each job let go as it starts), never more than four at once.
  await until(async () => {
    for (const done of release.splice(0)) done();
    return (await db.database.sql`select 1 from jobs where kind = 'test.slow'`).length === 0;
  });
  expect(peak).toBe(4);
});

test('notices that come within the claim interval make one claim, not one each', async () => {
  const leases = new Set<string>();
  const done: number[] = [];
  const kind = defineJob<{ n: number }>({
    kind: 'test.burst',
    run: async (job) => {
      // One claim leases every row it takes to the same instant.
      leases.add(job.lease);
      done.push(job.payload.n);
    },
  });
  const runner = startJobRunner(kind, {
    database: db.database,
    config: testConfig(),
    log,
    pollMs: 3_600_000,
    claimIntervalMs: 2_000,
  });
  runners.push(runner);
  expect(await runner.listening).toBe(true);
  const workspace = await createWorkspace(db.database.db);
  // Ten commits, each with its notice: the first is claimed at once, the rest wait out
  // the interval and go in the next claim together.
  for (let n = 0; n < 10; n += 1) {
    await db.database.db.transaction((tx) =>
      enqueueJob(tx, kind, { workspaceId: workspace.id, payload: { n } }),
    );
  }
  await until(async () => done.length === 10);
  expect(done.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  expect(leases.size).toBeLessThanOrEqual(3);
  // Stopping while a claim waits out the interval ends at once.
  runner.wake();
  await runner.stop();
});

test("a job's slot takes the next job once its work is done, while outcomes are written together", async () => {
  const base = defineJob<{ n: number }>({ kind: 'test.settle', run: async () => {} });
  const ran: number[] = [];
  const batches: number[][] = [];
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const kind: typeof base = {
    ...base,
    run: async (job, context) => {
      ran.push(job.payload.n);
      return base.run(job, context);
    },
    // The first write waits on the gate: the jobs done meanwhile queue behind it.
    settle: async (database, done) => {
      batches.push(done.map(({ job }) => job.payload.n));
      if (batches.length === 1) await gate;
      await base.settle!(database, done);
    },
  };
  const workspace = await createWorkspace(db.database.db);
  await run(kind, { SVC_JOBS_CONCURRENCY: '1' });
  for (let n = 0; n < 4; n += 1) {
    await db.database.db.transaction((tx) =>
      enqueueJob(tx, kind, { workspaceId: workspace.id, payload: { n } }),
    );
  }
  // One slot: every job ran while the first outcome was still being written.
  await until(async () => ran.length === 4);
  expect(batches).toEqual([[ran[0]]]);
  expect((await db.database.sql`select 1 from jobs where kind = 'test.settle'`).length).toBe(4);
  open();
  await until(
    async () => (await db.database.sql`select 1 from jobs where kind = 'test.settle'`).length === 0,
  );
  expect(batches).toEqual([[ran[0]], ran.slice(1)]);
});

test('a failed outcome write is a failed attempt of each of its jobs, retried later', async () => {
  const base = defineJob<null>({
    kind: 'test.settle-fails',
    retryDelayMs: () => 60_000,
    run: async () => {},
  });
  const kind: typeof base = {
    ...base,
    settle: async () => {
      throw new Error('the write broke');
    },
  };
  const workspace = await createWorkspace(db.database.db);
  await run(kind);
  const id = await db.database.db.transaction((tx) =>
    enqueueJob(tx, kind, { workspaceId: workspace.id, payload: null }),
  );
  await until(async () => (await jobRow(id))?.last_error === 'unexpected: the write broke');
  const row = await jobRow(id);
  expect(row).toMatchObject({ status: 'pending', attempts: 1 });
  expect(row!.due_in).toBeGreaterThan(50);
});

test("a done job's row goes only while it holds its claim; one a rewrite moved goes by its key", async () => {
  const kind = defineJob<{ n: number }>({ kind: 'test.settle-fence', run: async () => {} });
  const workspace = await createWorkspace(db.database.db);
  for (let n = 0; n < 3; n += 1) {
    await db.database.db.transaction((tx) =>
      enqueueJob(tx, kind, { workspaceId: workspace.id, payload: { n } }),
    );
  }
  const claimed = await claimJobs(db.database.db, kind.storage, {
    limit: 3,
    leaseMs: 60_000,
    perWorkspace: 3,
    running: new Map(),
  });
  expect(claimed).toHaveLength(3);
  const [lost, moved, kept] = claimed.sort((a, b) => a.payload.n - b.payload.n);
  // Another runner took `lost` over after its lease ran out.
  await db.database.sql`update jobs set run_at = now() + interval '1 hour' where id = ${lost!.id}`;
  // `moved` is no longer where its claim left it.
  await db.database.sql`update jobs set payload = payload where id = ${moved!.id}`;
  await kind.settle!(
    db.database.db,
    [lost!, moved!, kept!].map((job) => ({ job, outcome: null })),
  );
  const left = await db.database.sql<{ id: string }[]>`
    select id from jobs where kind = 'test.settle-fence'`;
  expect(left.map((row) => row.id)).toEqual([lost!.id]);
});

test('outcomes that come within the settle interval are written together', async () => {
  const base = defineJob<{ n: number }>({ kind: 'test.settle-interval', run: async () => {} });
  const batches: number[][] = [];
  const kind: typeof base = {
    ...base,
    settle: async (database, done) => {
      batches.push(done.map(({ job }) => job.payload.n));
      await base.settle!(database, done);
    },
  };
  const workspace = await createWorkspace(db.database.db);
  // Ten jobs due before the runner starts: one claim takes them all, the first to end is
  // written at once, and the rest (ending within milliseconds) wait out the 2 s interval
  // and go in one write.
  await db.database.db.transaction(async (tx) => {
    for (let n = 0; n < 10; n += 1) {
      await enqueueJob(tx, kind, { workspaceId: workspace.id, payload: { n } });
    }
  });
  await run(kind, {}, { settleIntervalMs: 2_000 });
  await until(async () => batches.flat().length === 10);
  expect(batches[0]).toHaveLength(1);
  expect(batches.length).toBeLessThanOrEqual(3);
  expect(batches.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  await until(
    async () =>
      (await db.database.sql`select 1 from jobs where kind = 'test.settle-interval'`).length === 0,
  );
});

test('a kind that answers an outcome without a settle fails the attempt rather than drop it', async () => {
  const base = defineJob<null>({
    kind: 'test.no-settle',
    retryDelayMs: () => 60_000,
    run: async () => {},
  });
  const kind: typeof base = { ...base, settle: undefined };
  const workspace = await createWorkspace(db.database.db);
  await run(kind);
  const id = await db.database.db.transaction((tx) =>
    enqueueJob(tx, kind, { workspaceId: workspace.id, payload: null }),
  );
  await until(async () => (await jobRow(id))?.last_error !== null);
  expect(await jobRow(id)).toMatchObject({
    status: 'pending',
    attempts: 1,
    last_error: 'unexpected: test.no-settle answered an outcome but has no settle',
  });
});

test('a claim cut short by a cap is followed as soon as its jobs end, not at the interval', async () => {
  const done: number[] = [];
  const kind = defineJob<{ n: number }>({
    kind: 'test.backlog',
    run: async (job) => {
      done.push(job.payload.n);
    },
  });
  const workspace = await createWorkspace(db.database.db);
  // A backlog of six, enqueued before the runner starts.
  await db.database.db.transaction(async (tx) => {
    for (let n = 0; n < 6; n += 1) {
      await enqueueJob(tx, kind, { workspaceId: workspace.id, payload: { n } });
    }
  });
  // Two slots, a claim interval of a minute: each claim is capped (one workspace holds at
  // most workspaceShare(2) = 1), so only the rule lets the backlog drain within seconds.
  await run(kind, { SVC_JOBS_CONCURRENCY: '2' }, { claimIntervalMs: 60_000 });
  await until(
    async () =>
      (await db.database.sql`select 1 from jobs where kind = 'test.backlog'`).length === 0,
  );
  expect(done.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
});
