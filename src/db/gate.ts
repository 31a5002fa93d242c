import { AsyncLocalStorage } from 'node:async_hooks';
import type { Writable } from 'node:stream';
import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import type { RequestedOperation } from '../http/guards/graph-request.js';
import { traceStatement } from '../tracing/statements.js';
import { drizzleOver, type Database } from './client.js';

/**
 * Thrown by a request's statement that never started because its request was cancelled
 * (deadline, client gone, shutdown). Not a failure of the service: logged quietly.
 */
export class OperationCancelled extends Error {
  override readonly name = 'OperationCancelled';
  constructor() {
    super('operation cancelled');
  }
}

/** PostgreSQL's query_canceled: a cancel request or statement_timeout ended the statement. */
const QUERY_CANCELED = '57014';

type Wrapping = { code?: unknown; cause?: unknown; originalError?: unknown } | null | undefined;

/**
 * Whether `error` is a statement ended because its request was, however it was wrapped
 * (graphql-js keeps it as `originalError`, drizzle as `cause`).
 */
export function isCancellation(error: unknown): boolean {
  let e = error as Wrapping;
  for (let depth = 0; e && depth < 8; depth += 1) {
    if (e instanceof OperationCancelled || e.code === QUERY_CANCELED) return true;
    e = (e.originalError ?? e.cause) as Wrapping;
  }
  return false;
}

export interface QueryGateOptions {
  /**
   * Connections one caller's statements may hold at once; the caller's further
   * statements wait in its own queue, so the rest of the pool stays free for others.
   * One of them is kept for statements the caller's open transactions run beside
   * themselves (see `createQueryGate`), so at most `share - 1` go to its other statements
   * and transactions (a share of 1 keeps one, and a second for those beside).
   */
  share: number;
  /**
   * A caller alone on the gate may go past its share, up to `max` statements at once
   * (its transactions stay within the share): while no other caller has made a request through the gate in
   * the last `quietMs` and none has a statement running or waiting. Idle connections
   * then serve the one caller there is (an automation, an import, a bench) rather than
   * sitting unused; the moment another caller appears, the first is held to its share
   * again (what it already runs finishes). Off unless given.
   */
  alone?: { max: number; quietMs: number };
  /**
   * Transactions open at once over every caller; more wait their turn, first come first
   * served. A transaction may hold its connection while it waits for a statement beside
   * it, so were every connection held so, none would be left to run those: with this
   * below the pool's size, the rest of it always serves statements. One opened beside a
   * transaction (nested through the request's database) takes none: its caller's kept
   * turn bounds those. Off unless given.
   */
  transactions?: number;
}

export interface QueryGate {
  /**
   * The database as one request sees it: its statements run under `caller`'s share of
   * the pool and are cancelled, running or queued, when `signal` aborts. Raw `sql` is the
   * shared pool, ungated: request code writes through `db`.
   */
  /** `signal` may be given as the function that makes it: called on the first statement. */
  forRequest(
    caller: string,
    signal: AbortSignal | (() => AbortSignal),
    /** The request's operation, for read routing (src/db/replicas.ts); ignored here. */
    operation?: () => RequestedOperation | null,
  ): Database;
  /** Statements `caller` has running or waiting (for tests and diagnostics). */
  load(caller: string): { running: number; waiting: number };
  /** The same over every caller, and the callers waiting (the metrics' gauges). */
  totals(): {
    running: number;
    waiting: number;
    callersWaiting: number;
    longestQueue: number;
    /** Transactions waiting for one of the `transactions` open over every caller to end. */
    transactionsWaiting: number;
  };
}

interface Waiter {
  /** A transaction's turn: never one borrowed while alone (see `takeTurn`). */
  transaction: boolean;
  grant(): void;
}

interface Turns {
  running: number;
  waiting: Waiter[];
  /** Statements of the caller's open transactions run beside them; served first. */
  beside: Waiter[];
}

/** A transaction of `caller` open on this gate, seen by the statements its work starts. */
interface OpenTransaction {
  caller: string;
  open: boolean;
}

/**
 * Every statement a request runs is prepared on its connection (postgres.js names it by
 * its text and reuses it): PostgreSQL parses and plans a statement shape once per
 * connection instead of once per request. Drizzle prepares only what is `.prepare()`d by
 * name; request statements have a bounded set of shapes (no SQL is built from input).
 */
function asPrepared(options: { prepare?: boolean } | undefined): { prepare: boolean } {
  return { ...options, prepare: true };
}

/** The subset of postgres.js that drizzle's session calls (`unsafe`, `begin`, `savepoint`). */
interface SessionClient {
  unsafe(query: string, params?: unknown[], options?: { prepare?: boolean }): LazyQuery;
  begin?<T>(work: (client: SessionClient) => Promise<T>): Promise<T>;
  savepoint?<T>(work: (client: SessionClient) => Promise<T>): Promise<T>;
  /** `COPY … FROM STDIN` on the transaction's connection (src/db/copy.ts). */
  copyFrom?(statement: string): Promise<Writable>;
}

/**
 * A statement drizzle may ask `.values()` of before awaiting it, as it does of a
 * postgres.js query; it starts only when awaited, so its caller's turn comes first.
 */
class LazyQuery implements PromiseLike<unknown> {
  private asValues = false;
  private started: Promise<unknown> | undefined;
  constructor(private readonly run: (asValues: boolean) => Promise<unknown>) {}
  values(): this {
    this.asValues = true;
    return this;
  }
  then<A = unknown, B = never>(
    onFulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.started ??= this.run(this.asValues);
    return this.started.then(onFulfilled, onRejected);
  }
}

/**
 * A request's view of the pool. Its drizzle is made on first read: an operation that runs
 * no statement (`{ version }`) makes none. A class, so that every view shares one shape
 * (a getter in an object literal gives each its own, src/context.ts says why that costs).
 */
class RequestDatabase implements Database {
  // A plain field, as the context's are (src/context.ts): reachable through Object.create.
  private made: Database['db'] | undefined;
  constructor(
    readonly sql: Sql,
    private readonly make: (caller: string, signal: AbortSignal) => Database['db'],
    private readonly caller: string,
    private readonly signal: AbortSignal | (() => AbortSignal),
  ) {}

  get db(): Database['db'] {
    const { signal } = this;
    return (this.made ??= this.make(this.caller, typeof signal === 'function' ? signal() : signal));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Gates every graph request's statements (docs/limits.md, "Half the pool for one caller"):
 * one caller holds at most `share` pooled connections, and a cancelled request's
 * statements are cancelled in PostgreSQL rather than left to run on after its answer.
 *
 * A transaction holds its turn for its whole life; the statements it runs through its
 * own handle take no other. A statement its work runs through the request's database
 * instead (beside the transaction, committed on its own: an import's progress) needs a
 * connection of its own while the transaction holds locks. Were it to queue with the
 * caller's other statements, those could be the caller's other transactions waiting for
 * this one's locks, holding every turn: each would wait for the other until the deadline.
 * So such a statement waits only for the one turn the caller's other statements never
 * take, and other such statements before it, which wait for no turn of the caller's.
 */
export function createQueryGate(database: Database, options: QueryGateOptions): QueryGate {
  const share = Math.max(1, options.share);
  /** What the caller's statements and transactions may hold; the rest is for `beside`. */
  const ordinary = Math.max(1, share - 1);
  const byCaller = new Map<string, Turns>();
  const transactions = new AsyncLocalStorage<OpenTransaction>();
  const alone = options.alone && options.alone.max > ordinary ? options.alone : null;
  // Transactions open over every caller, and those waiting for one to end (`transactions`).
  const transactionMax = options.transactions ?? Infinity;
  let transactionsOpen = 0;
  const transactionQueue: Waiter[] = [];
  // The two callers seen last, and when: whether anyone but `caller` was seen lately is
  // then one comparison, however many callers there are. Two records swapped in place:
  // every request passes here.
  let latest = { caller: '', at: -Infinity };
  let previous = { caller: '', at: -Infinity };

  function seen(caller: string): void {
    if (!alone) return;
    if (latest.caller !== caller) {
      const older = previous;
      previous = latest;
      latest = older;
      latest.caller = caller;
    }
    latest.at = performance.now();
  }

  /** How many statements and transactions `caller` may hold now (its share, or more alone). */
  function limitOf(caller: string): number {
    if (!alone || byCaller.size > 1) return ordinary;
    const other = latest.caller === caller ? previous : latest;
    return performance.now() - other.at >= alone.quietMs ? alone.max : ordinary;
  }

  function turnsOf(caller: string): Turns {
    let turns = byCaller.get(caller);
    if (!turns) byCaller.set(caller, (turns = { running: 0, waiting: [], beside: [] }));
    return turns;
  }

  function release(caller: string, turns: Turns): void {
    // The turn passes on: first to a statement beside an open transaction, then to
    // ordinary ones while the caller holds less than it may (more than one when it has
    // just come to be alone).
    turns.running -= 1;
    const beside = turns.beside.shift();
    if (beside) {
      turns.running += 1;
      beside.grant();
    }
    const limit = limitOf(caller);
    for (
      let next = turns.waiting[0];
      next && turns.running < (next.transaction ? ordinary : limit);
      next = turns.waiting[0]
    ) {
      turns.waiting.shift();
      turns.running += 1;
      next.grant();
    }
    if (turns.running === 0) byCaller.delete(caller);
  }

  /**
   * Turns a statement beside an open transaction may find taken: one more than the caller
   * may hold, or than it holds (having gone past its share alone, its transactions may
   * still wait for what runs beside them).
   */
  function besideLimitOf(caller: string, turns: Turns): number {
    return (alone && turns.running > ordinary ? alone.max : limitOf(caller)) + 1;
  }

  /**
   * Waits for one of `caller`'s turns; answers the function that gives it back. A
   * statement `beside` an open transaction of the caller may take the turn kept for it.
   */
  function takeTurn(
    caller: string,
    signal: AbortSignal,
    beside: boolean,
    transaction: boolean,
  ): Promise<() => void> {
    if (signal.aborted) return Promise.reject(new OperationCancelled());
    const turns = turnsOf(caller);
    const done = once(() => release(caller, turns));
    const free = beside
      ? turns.running < besideLimitOf(caller, turns)
      : // A transaction never borrows: it may hold its connection waiting for a statement
        // beside it, and borrowed turns held so would leave the pool none to give.
        turns.waiting.length === 0 && turns.running < (transaction ? ordinary : limitOf(caller));
    if (free) {
      turns.running += 1;
      return Promise.resolve(done);
    }
    const queue = beside ? turns.beside : turns.waiting;
    return waitIn(queue, transaction, signal, () => {
      if (turns.running === 0 && !turns.waiting.length && !turns.beside.length) {
        byCaller.delete(caller);
      }
    }).then(() => done);
  }

  /** Waits until fewer than `transactions` are open; answers the function that ends it. */
  function openTransaction(signal: AbortSignal): Promise<() => void> {
    const done = once(() => {
      transactionsOpen -= 1;
      const next = transactionQueue.shift();
      if (next) {
        transactionsOpen += 1;
        next.grant();
      }
    });
    if (transactionsOpen < transactionMax) {
      transactionsOpen += 1;
      return Promise.resolve(done);
    }
    return waitIn(transactionQueue, true, signal).then(() => done);
  }

  function forRequest(caller: string, signal: AbortSignal | (() => AbortSignal)): Database {
    seen(caller);
    return new RequestDatabase(database.sql, requestDb, caller, signal);
  }

  /** Drizzle over `caller`'s share of the pool, cancelled with `signal`. */
  function requestDb(caller: string, signal: AbortSignal): Database['db'] {
    const running = new Set<PendingQuery<Row[]>>();
    let watching = false;

    /** Runs one postgres.js query, cancelling it in PostgreSQL if the request is. */
    function track(query: PendingQuery<Row[]>, asValues: boolean): Promise<unknown> {
      if (signal.aborted) return Promise.reject(new OperationCancelled());
      if (!watching) {
        watching = true;
        signal.addEventListener('abort', () => running.forEach(cancelQuietly), { once: true });
      }
      if (asValues) query.values();
      running.add(query);
      return query.finally(() => running.delete(query));
    }

    /** Inside a transaction: the connection is already this request's. */
    function held(tx: TransactionSql): SessionClient {
      return {
        unsafe: (query, params, options) =>
          new LazyQuery((asValues) =>
            traceStatement(query, () =>
              track(tx.unsafe(query, params as never, asPrepared(options)), asValues),
            ),
          ),
        savepoint: (work) => tx.savepoint((inner) => work(held(inner))) as never,
        copyFrom: (statement) => traceStatement(statement, () => tx.unsafe(statement).writable()),
      };
    }

    async function inTurn<T>(
      work: (beside: boolean) => Promise<T>,
      transaction = false,
    ): Promise<T> {
      const within = transactions.getStore();
      const beside = within?.open === true && within.caller === caller;
      const done = await takeTurn(caller, signal, beside, transaction);
      try {
        return await work(beside);
      } finally {
        done();
      }
    }

    /** The transaction's work, seen by the statements it starts as their open transaction. */
    async function asOpen<T>(work: () => Promise<T>): Promise<T> {
      const open: OpenTransaction = { caller, open: true };
      try {
        return await transactions.run(open, work);
      } finally {
        open.open = false;
      }
    }

    const client: SessionClient = {
      unsafe: (query, params, options) =>
        new LazyQuery((asValues) =>
          traceStatement(query, () =>
            // The pool pipelines nothing (src/db/client.ts): a statement waits in
            // postgres.js's queue for an idle connection, never behind another caller's.
            inTurn(() =>
              track(database.sql.unsafe(query, params as never, asPrepared(options)), asValues),
            ),
          ),
        ),
      begin: (work) =>
        inTurn(async (beside) => {
          const end = beside ? null : await openTransaction(signal);
          try {
            if (signal.aborted) throw new OperationCancelled();
            return (await database.sql.begin((tx) => asOpen(() => work(held(tx))))) as never;
          } finally {
            end?.();
          }
        }, true),
    };
    return drizzleOver(client as unknown as Sql);
  }

  return {
    forRequest,
    load(caller) {
      const turns = byCaller.get(caller);
      return {
        running: turns?.running ?? 0,
        waiting: (turns?.waiting.length ?? 0) + (turns?.beside.length ?? 0),
      };
    },
    totals() {
      const totals = {
        running: 0,
        waiting: 0,
        callersWaiting: 0,
        longestQueue: 0,
        transactionsWaiting: transactionQueue.length,
      };
      for (const turns of byCaller.values()) {
        const waiting = turns.waiting.length + turns.beside.length;
        totals.running += turns.running;
        totals.waiting += waiting;
        if (waiting > 0) totals.callersWaiting += 1;
        totals.longestQueue = Math.max(totals.longestQueue, waiting);
      }
      return totals;
    },
  };
}

/**
 * Waits in `queue` until its waiter is granted; leaves the queue, cancelled, when `signal`
 * aborts first, and then runs `left`. A signal aborted already never queues (its abort
 * event is past: the waiter would wait for good).
 */
function waitIn(
  queue: Waiter[],
  transaction: boolean,
  signal: AbortSignal,
  left?: () => void,
): Promise<void> {
  if (signal.aborted) {
    left?.();
    return Promise.reject(new OperationCancelled());
  }
  return new Promise((resolve, reject) => {
    const waiter: Waiter = {
      transaction,
      grant: () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
    };
    function onAbort() {
      queue.splice(queue.indexOf(waiter), 1);
      reject(new OperationCancelled());
      left?.();
    }
    signal.addEventListener('abort', onAbort, { once: true });
    queue.push(waiter);
  });
}

/**
 * Asks PostgreSQL to stop `query`. Best effort: a server that cannot be reached (the very
 * outage that made the request give up, often) fails the statement on its own, and left
 * unheard, the cancel request's refusal would end the process.
 */
function cancelQuietly(query: PendingQuery<Row[]>): void {
  query.cancel().catch(() => {});
}

function once(fn: () => void): () => void {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    fn();
  };
}
