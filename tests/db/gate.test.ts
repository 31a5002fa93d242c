import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql, type SQL } from 'drizzle-orm';
import type { ReservedSql } from 'postgres';
import { createDatabase, type Database } from '../../src/db/client.js';
import {
  createQueryGate,
  isCancellation,
  OperationCancelled,
  type QueryGate,
} from '../../src/db/gate.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { waitFor } from '../support/pg-cluster.js';

const LOCK = 0x67617465;
let db: TestDatabase;
let pool: Database;
let gate: QueryGate;
let holder: ReservedSql;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createDatabase(db.url, { max: 6, applicationName: 'gate test' });
  // Share 3: two turns for a caller's statements and transactions, one kept for those
  // its open transactions run beside themselves.
  gate = createQueryGate(pool, { share: 3 });
});

afterAll(async () => {
  await pool.close();
  await db.drop();
});

/** Holds the advisory lock the gated statements wait for, until `release()`. */
async function holdLock(): Promise<() => Promise<void>> {
  holder = await db.database.sql.reserve();
  await holder`select pg_advisory_lock(${LOCK})`;
  return async () => {
    await holder`select pg_advisory_unlock(${LOCK})`;
    holder.release();
  };
}

/** Drizzle starts a statement only when awaited: this starts it at once. */
async function waitForLock(database: Database): Promise<unknown> {
  return await database.db.execute(sql`select pg_advisory_xact_lock(${LOCK})`);
}

/** Drizzle wraps a driver's error, keeping it as the cause. */
function causeOf(error: unknown): unknown {
  return (error as { cause?: unknown }).cause;
}

/** Backends of the gate's pool waiting for the lock, once there are `count` (bounded wait). */
async function waitersReach(count: number): Promise<number> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const [row] = await db.database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and application_name = 'gate test'
        and wait_event_type = 'Lock'`;
    const n = row?.n ?? 0;
    if (n === count || Date.now() > deadline) return n;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Holds the lock while `count` of ada's statements start on `on`: `running` of them wait
 * for it, the rest for a turn (bounded wait); then lets them all finish.
 */
async function heldTo(on: QueryGate, count: number, running: number): Promise<void> {
  const release = await holdLock();
  const signal = new AbortController().signal;
  const work = Array.from({ length: count }, () => waitForLock(on.forRequest('ada', signal)));
  expect(await waitersReach(running)).toBe(running);
  expect(on.load('ada')).toEqual({ running, waiting: count - running });
  await release();
  await Promise.all(work);
  expect(on.load('ada')).toEqual({ running: 0, waiting: 0 });
}

/**
 * Ada's transaction that takes the lock and, once let go, runs a statement beside itself
 * (committed on its own, as an import's progress is); then `followers` more of hers that
 * wait for the lock. `done` settles when all of them have.
 */
async function besideTransactions(
  on: QueryGate,
  followers: number,
): Promise<{ letGo(): void; done: Promise<unknown> }> {
  const signal = new AbortController().signal;
  const database = () => on.forRequest('ada', signal);
  let letGo!: () => void;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  let tookLock!: () => void;
  const locked = new Promise<void>((resolve) => (tookLock = resolve));
  const first = database().db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${LOCK})`);
    tookLock();
    await held;
    await database().db.execute(sql`select 1`);
  });
  await locked;
  const rest = Array.from({ length: followers }, () =>
    database().db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${LOCK})`);
    }),
  );
  return { letGo, done: Promise.all([first, ...rest]) };
}

describe('createQueryGate', () => {
  test('one caller runs at most its share (less the kept turn) of statements at once; the rest wait their turn', async () => {
    const release = await holdLock();
    const signal = new AbortController().signal;
    const work = Array.from({ length: 5 }, () => waitForLock(gate.forRequest('ada', signal)));
    expect(await waitersReach(2)).toBe(2);
    expect(gate.load('ada')).toEqual({ running: 2, waiting: 3 });
    // What the metrics' gauges read (svc_db_gate_*).
    expect(gate.totals()).toEqual({
      running: 2,
      waiting: 3,
      callersWaiting: 1,
      longestQueue: 3,
      transactionsWaiting: 0,
    });
    await release();
    await Promise.all(work);
    expect(gate.load('ada')).toEqual({ running: 0, waiting: 0 });
    expect(gate.totals()).toEqual({
      running: 0,
      waiting: 0,
      callersWaiting: 0,
      longestQueue: 0,
      transactionsWaiting: 0,
    });
  });

  test("another caller's statement runs while the first caller's share is busy", async () => {
    const release = await holdLock();
    const signal = new AbortController().signal;
    const busy = Array.from({ length: 4 }, () => waitForLock(gate.forRequest('ada', signal)));
    expect(await waitersReach(2)).toBe(2);
    const rows = await gate.forRequest('grace', signal).db.execute(sql`select 1 as one`);
    expect([...rows]).toEqual([{ one: 1 }]);
    await release();
    await Promise.all(busy);
  });

  test("a statement never queues behind another caller's statement on a busy connection", async () => {
    const release = await holdLock();
    const other = await db.database.sql.reserve();
    await other`select pg_advisory_lock(${LOCK + 1})`;
    // Statements without parameters: postgres.js would pipeline later ones behind them.
    const waitOn = (key: number) => sql.raw(`select pg_advisory_xact_lock(${key})`);
    const start = async (caller: string, query: SQL) => [
      ...(await gate.forRequest(caller, signal).db.execute(query)),
    ];
    const signal = new AbortController().signal;
    let ada: Promise<unknown>[] = [];
    try {
      ada = Array.from({ length: 2 }, () => start('ada', waitOn(LOCK)));
      expect(await waitersReach(2)).toBe(2);
      // The service's own statements (ungated) take the other four connections.
      const internal = Array.from({ length: 4 }, () =>
        pool.sql.unsafe(`select pg_advisory_xact_lock(${LOCK + 1})`).execute(),
      );
      expect(await waitersReach(6)).toBe(6);
      const grace = start('grace', sql.raw('select 1 as one'));
      await other`select pg_advisory_unlock(${LOCK + 1})`;
      await Promise.all(internal);
      // Ada's statements still wait for the lock: Grace's ran on a freed connection.
      const outcome = await Promise.race([
        grace,
        new Promise((resolve) => setTimeout(() => resolve('still queued behind ada'), 3_000)),
      ]);
      expect(outcome).toEqual([{ one: 1 }]);
    } finally {
      await other`select pg_advisory_unlock_all()`;
      other.release();
      await release();
    }
    await Promise.all(ada);
  });

  test('an aborted request cancels its running statements in PostgreSQL and drops its queued ones', async () => {
    const release = await holdLock();
    const controller = new AbortController();
    const database = gate.forRequest('ada', controller.signal);
    const work = Array.from({ length: 3 }, () => waitForLock(database).catch((e: unknown) => e));
    expect(await waitersReach(2)).toBe(2);
    controller.abort();
    const errors = await Promise.all(work);
    expect(errors.every(isCancellation)).toBe(true);
    expect(errors.filter((e) => causeOf(e) instanceof OperationCancelled)).toHaveLength(1);
    expect(await waitersReach(0)).toBe(0);
    expect(gate.load('ada')).toEqual({ running: 0, waiting: 0 });
    await release();
  });

  test('a transaction runs on one turn and is rolled back when its request is cancelled', async () => {
    const release = await holdLock();
    const controller = new AbortController();
    const database = gate.forRequest('ada', controller.signal);
    const write = database.db
      .transaction(async (tx) => {
        await tx.execute(sql`create table gate_probe (id int)`);
        await tx.execute(sql`select pg_advisory_xact_lock(${LOCK})`);
      })
      .catch((e: unknown) => e);
    expect(await waitersReach(1)).toBe(1);
    expect(gate.load('ada').running).toBe(1);
    controller.abort();
    expect(isCancellation(await write)).toBe(true);
    const [table] = await db.database.sql`select to_regclass('gate_probe') as name`;
    expect(table?.name).toBeNull();
    await release();
  });

  test("a statement beside a caller's open transaction never waits for the caller's transactions that wait for it", async () => {
    // Ada's next transactions, once the first holds the lock: the first of them waits for
    // the lock, the others for a turn.
    const run = await besideTransactions(gate, 3);
    expect(await waitersReach(1)).toBe(1);
    expect(gate.load('ada')).toEqual({ running: 2, waiting: 2 });
    // Before the kept turn, the statement beside waited behind them until the deadline.
    run.letGo();
    await run.done;
    expect(gate.load('ada')).toEqual({ running: 0, waiting: 0 });
  });

  test('the caller holds at most its share: the kept turn serves only statements beside a transaction', async () => {
    // The kept turn stays free: two of ada's statements wait for the lock, two for a turn.
    await heldTo(gate, 4, 2);
  });

  test("a request's view reads its signal at its first statement, once: one that runs none reads none", async () => {
    const controller = new AbortController();
    let reads = 0;
    const signal = () => {
      reads += 1;
      return controller.signal;
    };
    const idle = gate.forRequest('ada', signal);
    expect(idle.sql).toBe(pool.sql);
    const working = gate.forRequest('ada', signal);
    expect(reads).toBe(0);
    const rows = await working.db.execute(sql`select 1 as one`);
    await working.db.execute(sql`select 2 as two`);
    expect([...rows]).toEqual([{ one: 1 }]);
    expect(reads).toBe(1);
  });

  test('a request already cancelled starts no statement', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await gate
      .forRequest('ada', controller.signal)
      .db.execute(sql`select 1`)
      .catch((e: unknown) => e);
    expect(causeOf(error)).toBeInstanceOf(OperationCancelled);
  });
});

describe('a caller alone', () => {
  /** A gate whose callers may hold 4 alone; another caller seen in the last minute ends that. */
  const aloneGate = () => createQueryGate(pool, { share: 3, alone: { max: 4, quietMs: 60_000 } });

  test('holds up to its alone share while nobody else has made a request', async () => {
    await heldTo(aloneGate(), 5, 4);
  });

  test('is held to its share again once another caller makes a request', async () => {
    const gate = aloneGate();
    const signal = new AbortController().signal;
    await gate.forRequest('ada', signal).db.execute(sql`select 1`);
    const rows = await gate.forRequest('grace', signal).db.execute(sql`select 1 as one`);
    expect([...rows]).toEqual([{ one: 1 }]);
    await heldTo(gate, 5, 2);
  });

  test('is alone again once the other caller has been quiet for the quiet time', async () => {
    // A quiet time of none: Grace's request, over before Ada's statements start, is past.
    const gate = createQueryGate(pool, { share: 3, alone: { max: 4, quietMs: 0 } });
    await gate.forRequest('grace', new AbortController().signal).db.execute(sql`select 1`);
    await heldTo(gate, 5, 4);
  });

  test('borrows for statements, never for transactions', async () => {
    const gate = aloneGate();
    // Alone, ada's transactions still take at most her share: the first holds the lock,
    // the second waits for it, the third for a turn.
    const run = await besideTransactions(gate, 2);
    expect(await waitersReach(1)).toBe(1);
    expect(gate.load('ada')).toEqual({ running: 2, waiting: 1 });
    run.letGo();
    await run.done;
    expect(gate.load('ada')).toEqual({ running: 0, waiting: 0 });
  });

  test('a statement beside its open transaction still runs when its share is taken back', async () => {
    const gate = aloneGate();
    const signal = new AbortController().signal;
    // Alone, ada holds her transaction and three statements waiting for its lock.
    const run = await besideTransactions(gate, 0);
    const statements = Array.from({ length: 3 }, () => waitForLock(gate.forRequest('ada', signal)));
    expect(await waitersReach(3)).toBe(3);
    expect(gate.load('ada')).toEqual({ running: 4, waiting: 0 });
    // Grace's request takes ada's alone share back: ada's share is two, she holds four.
    await gate.forRequest('grace', signal).db.execute(sql`select 1`);
    run.letGo();
    await Promise.all([run.done, ...statements]);
    expect(gate.load('ada')).toEqual({ running: 0, waiting: 0 });
  });
});

describe('transactions over every caller', () => {
  test('at most `transactions` are open at once, so statements beside them always find a connection', async () => {
    // The pool's 6 connections: 4 for transactions, 2 always free for statements.
    const gate = createQueryGate(pool, { share: 3, transactions: 4 });
    const release = await holdLock();
    const signal = AbortSignal.timeout(10_000);
    // Three callers, two transactions each (their share less the kept turn): each waits
    // for the lock, then runs a statement beside itself, as an import's commit does.
    const work = ['ada', 'grace', 'lin'].flatMap((caller) =>
      [1, 2].map(() => {
        const database = () => gate.forRequest(caller, signal);
        return database().db.transaction(async (tx) => {
          await tx.execute(sql`select pg_advisory_xact_lock_shared(${LOCK})`);
          await database().db.execute(sql`select 1`);
        });
      }),
    );
    // Six transactions would have held the whole pool, each waiting for a connection for
    // its statement beside: all of them until the deadline.
    expect(await waitersReach(4)).toBe(4);
    await release();
    await Promise.all(work);
    expect(['ada', 'grace', 'lin'].map((caller) => gate.load(caller))).toEqual([
      { running: 0, waiting: 0 },
      { running: 0, waiting: 0 },
      { running: 0, waiting: 0 },
    ]);
  });

  test.each([
    ['while it waits', true],
    ['before it has queued', false],
  ])(
    'a transaction waiting for one to end leaves the queue when its request is cancelled %s',
    async (_when, queuedFirst) => {
      const gate = createQueryGate(pool, { share: 3, transactions: 1 });
      const release = await holdLock();
      const first = gate
        .forRequest('ada', new AbortController().signal)
        .db.transaction(async (tx) => {
          await tx.execute(sql`select pg_advisory_xact_lock(${LOCK})`);
        });
      expect(await waitersReach(1)).toBe(1);
      const controller = new AbortController();
      const second = gate
        .forRequest('grace', controller.signal)
        .db.transaction(async (tx) => {
          await tx.execute(sql`select 1`);
        })
        .catch((error: unknown) => error);
      if (queuedFirst)
        await waitFor('a transaction waiting', () => gate.totals().transactionsWaiting === 1);
      controller.abort();
      expect(await second).toBeInstanceOf(OperationCancelled);
      expect(gate.load('grace')).toEqual({ running: 0, waiting: 0 });
      expect(gate.totals().transactionsWaiting).toBe(0);
      await release();
      await first;
      // The one open slot is free again.
      await gate.forRequest('lin', new AbortController().signal).db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
      });
    },
  );
});

describe('statementTimeoutMs', () => {
  test('ends a statement that runs past it', async () => {
    const limited = createDatabase(db.url, { max: 1, statementTimeoutMs: 100 });
    try {
      const error = await limited.db.execute(sql`select pg_sleep(5)`).catch((e: unknown) => e);
      expect(isCancellation(error)).toBe(true);
    } finally {
      await limited.close();
    }
  });
});
