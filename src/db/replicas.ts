import { Kind, OperationTypeNode, type OperationDefinitionNode } from 'graphql';
import { LRUCache } from 'lru-cache';
import type { Sql } from 'postgres';
import { operationToRun, type RequestedOperation } from '../http/guards/graph-request.js';
import type { Logger } from '../log.js';
import type { Database } from './client.js';
import type { QueryGate } from './gate.js';

// Reads on replicas (issue 30 part 2, docs/scaling.md "Reads on replicas"). A request
// goes to a replica only when all of these hold, decided once, when its context is made:
//  - it is a query whose every root field is a list, a search or the MCP tools' record
//    read (STALE_TOLERANT): what a caller may see a moment old;
//  - its caller ran no mutation in the last `writeWindowMs` (read-your-writes), in this
//    process or, told by NOTIFY, in another; for a window after this process (re)starts
//    listening, every caller counts as one;
//  - the replica has replayed the primary's WAL up to a point at most `maxLagMs` ago,
//    checked here every CHECK_MS.
// Everything else, and everything when no replica qualifies, runs on the primary.

/** Root fields whose answer may be up to SVC_DATABASE_REPLICA_MAX_LAG old. */
export const STALE_TOLERANT: ReadonlySet<string> = new Set([
  'contacts',
  'contactPage',
  'contactDuplicates',
  'tasks',
  'users',
  'contact',
  '__typename',
]);

/** Where a caller's mutation is announced, so every process routes it to the primary. */
export const WRITES_CHANNEL = 'svc_replica_writes';

type Route = 'write' | 'replica' | 'primary';

/** Whether an operation writes, may read a replica, or must read the primary. */
export function routeOf(operation: OperationDefinitionNode | null): Route {
  if (!operation) return 'primary';
  if (operation.operation === OperationTypeNode.MUTATION) return 'write';
  if (operation.operation !== OperationTypeNode.QUERY) return 'primary';
  const tolerant = operation.selectionSet.selections.every(
    (selection) => selection.kind === Kind.FIELD && STALE_TOLERANT.has(selection.name.value),
  );
  return tolerant ? 'replica' : 'primary';
}

/** A write-ahead log position (`16/B374D848`) as a number that orders like it. */
export function lsnValue(lsn: string): bigint {
  const [high = '0', low = '0'] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

export interface Replica {
  database: Database;
  gate: QueryGate;
}

export interface ReadRoutingOptions {
  primary: Database;
  primaryGate: QueryGate;
  replicas: readonly Replica[];
  /** A replica further behind than this serves nothing (SVC_DATABASE_REPLICA_MAX_LAG). */
  maxLagMs: number;
  /** How long a caller that ran a mutation reads from the primary. */
  writeWindowMs: number;
  log: Logger;
}

/**
 * The query gate requests use when replicas are configured: the primary's, or a
 * replica's for a read that qualifies. `forRequest` takes the request's operation as a
 * third argument (a function, so only routing pays for reading it).
 */
export interface ReadRouting extends QueryGate {
  /** Replicas that may serve reads now (tests, metrics). */
  serving(): number;
  /** Checks the replicas now rather than at the next tick (tests). */
  check(): Promise<void>;
  close(): Promise<void>;
}

const CHECK_MS = 500;
/** Primary positions remembered: enough to cover SVC_DATABASE_REPLICA_MAX_LAG's maximum. */
const SAMPLES_MAX = 7_300;
/** Callers remembered as recent writers before the expired ones are swept. */
const WRITERS_SWEEP_AT = 10_000;

interface Sample {
  lsn: bigint;
  at: number;
}

/** Replicas' replay measured against positions the primary reported, newest last. */
function createLagMonitor(options: ReadRoutingOptions) {
  const samples: Sample[] = [];
  const caughtAt = options.replicas.map(() => Number.NEGATIVE_INFINITY);
  const healthy = options.replicas.map(() => false);

  async function replayed(sql: Sql): Promise<bigint | null> {
    const [row] = await sql<{ standby: boolean; lsn: string | null }[]>`
      select pg_is_in_recovery() as standby, pg_last_wal_replay_lsn()::text as lsn`;
    // A promoted replica has left the primary's history: it serves nothing.
    return row?.standby && row.lsn ? lsnValue(row.lsn) : null;
  }

  async function checkOne(index: number): Promise<void> {
    const replica = options.replicas[index] as Replica;
    let position: bigint | null = null;
    try {
      position = await replayed(replica.database.sql);
    } catch {
      position = null;
    }
    // The newest position the replica has replayed: everything committed before it was
    // sampled is visible there.
    const caught = position === null ? undefined : samples.findLast((s) => s.lsn <= position);
    caughtAt[index] =
      caught?.at ?? (position === null ? Number.NEGATIVE_INFINITY : caughtAt[index]!);
    const within = performance.now() - (caughtAt[index] as number) <= options.maxLagMs;
    if (within !== healthy[index]) {
      healthy[index] = within;
      if (within) options.log.info({ replica: index + 1 }, 'replica serving reads');
      else
        options.log.warn(
          { replica: index + 1 },
          'replica behind or away: its reads go to the primary',
        );
    }
  }

  async function check(): Promise<void> {
    try {
      const [row] = await options.primary.sql<{ lsn: string }[]>`
        select pg_current_wal_lsn()::text as lsn`;
      samples.push({ lsn: lsnValue(row!.lsn), at: performance.now() });
      if (samples.length > SAMPLES_MAX) samples.shift();
    } catch {
      // The primary is away: no new position, so the replicas' lag grows until it is back.
    }
    await Promise.all(options.replicas.map((_replica, index) => checkOne(index)));
  }

  return {
    check,
    /** The replicas within the lag bound now. */
    serving: (): number[] =>
      healthy.flatMap((ok, index) =>
        ok && performance.now() - (caughtAt[index] as number) <= options.maxLagMs ? [index] : [],
      ),
  };
}

/**
 * Callers that ran a mutation lately, in this process or (by NOTIFY) another. Notices sent
 * while this process was not listening (before it started, while its LISTEN connection
 * reconnected) are lost, so after each LISTEN every caller counts as a writer for a window.
 */
function createWriters(windowMs: number) {
  const until = new Map<string, number>();
  let everyoneUntil = Number.POSITIVE_INFINITY;
  return {
    listening(): void {
      everyoneUntil = performance.now() + windowMs;
    },
    mark(caller: string): void {
      if (until.size >= WRITERS_SWEEP_AT) {
        const now = performance.now();
        for (const [key, end] of until) if (end <= now) until.delete(key);
      }
      until.set(caller, performance.now() + windowMs);
    },
    recent(caller: string): boolean {
      const now = performance.now();
      return everyoneUntil > now || (until.get(caller) ?? 0) > now;
    },
  };
}

/** Starts checking the replicas and listening for other processes' writers. */
export async function startReadRouting(options: ReadRoutingOptions): Promise<ReadRouting> {
  const { primary, primaryGate, log } = options;
  const monitor = createLagMonitor(options);
  const writers = createWriters(options.writeWindowMs);
  const routes = new LRUCache<string, Route>({ max: 1024 });
  let turn = 0;
  const listener = await primary.sql.listen(
    WRITES_CHANNEL,
    (caller) => writers.mark(caller),
    () => writers.listening(),
  );
  await monitor.check();
  // A check still waiting on a hung server is not stacked upon.
  let checking: Promise<void> | null = null;
  const tick = () => void (checking ??= monitor.check().finally(() => (checking = null)));
  const timer = setInterval(tick, Math.min(CHECK_MS, options.maxLagMs / 4));
  timer.unref();

  function routeFor(operation: () => RequestedOperation | null): Route {
    const requested = operation();
    if (!requested) return 'primary';
    const key = `${requested.operationName ?? ''}\n${requested.query}`;
    let route = routes.get(key);
    if (route === undefined) routes.set(key, (route = routeOf(operationToRun(requested))));
    return route;
  }

  function announceWrite(caller: string): void {
    writers.mark(caller);
    // Sent as the mutation starts, so other processes hear it before its answer leaves.
    primary.sql`select pg_notify(${WRITES_CHANNEL}, ${caller})`.catch((error: unknown) =>
      log.warn({ err: error }, 'could not announce a write to the other processes'),
    );
  }

  return {
    forRequest(caller, signal, operation) {
      if (!operation) return primaryGate.forRequest(caller, signal);
      const route = routeFor(operation);
      if (route === 'write') announceWrite(caller);
      if (route !== 'replica' || writers.recent(caller))
        return primaryGate.forRequest(caller, signal);
      const serving = monitor.serving();
      if (serving.length === 0) return primaryGate.forRequest(caller, signal);
      const replica = options.replicas[serving[turn++ % serving.length] as number] as Replica;
      return replica.gate.forRequest(caller, signal);
    },
    load: (caller) => primaryGate.load(caller),
    totals: () => primaryGate.totals(),
    serving: () => monitor.serving().length,
    check: () => monitor.check(),
    async close() {
      clearInterval(timer);
      await listener.unlisten().catch(() => {});
      await Promise.all(options.replicas.map((replica) => replica.database.close()));
    },
  };
}
