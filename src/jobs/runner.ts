// The one runner of background work (docs/plugins.md "Background jobs", docs/scaling.md):
// webhook deliveries, chat media downloads and every kind a plugin defines go through it.
//
// A kind's jobs are rows of a table: the core `jobs` table by default, or a domain's own
// table when that row is already the record the product shows (a webhook delivery, a
// message's media state). The runner owns what is the same for all of them:
//  - the claim: one statement (one short transaction) that locks due rows FOR UPDATE SKIP
//    LOCKED, counts the attempt and pushes the due time a lease ahead, so no other process
//    takes the same attempt and a process that dies mid-job leaves it due again after the
//    lease;
//  - fairness: the claim ranks due rows per workspace and takes each workspace's first
//    before any workspace's second (round-robin), and never lets one workspace hold more
//    than its share of this process's slots (`perWorkspace`), so others always find room;
//  - an optional second cap by a group column (a webhook: a hanging receiver never holds
//    every slot of its workspace);
//  - bounded concurrency per process, retries with backoff inside a retry window (in the
//    database's clock), and the wake-up: NOTIFY on JOBS_CHANNEL at the enqueuing commit,
//    a poll for retries coming due;
//  - outcomes, when the kind hands them over (`settle`): the job's slot is free once its
//    work is done, and the outcomes are written in batches, a statement per batch.
// Every outcome is written only while the row still holds the attempt it was claimed with,
// so a runner whose lease ran out never overwrites the outcome of the one that took over.
import { sql, type SQL } from 'drizzle-orm';
import { toSnakeCase } from 'drizzle-orm/casing';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Config } from '../config.js';
import { isDatabaseUnavailable, type Database, type Db } from '../db/client.js';
import { preparedSql } from '../db/prepared.js';
import type { Logger } from '../log.js';
import { jobs as jobMetrics } from '../metrics/registry.js';
import { SpanKind, withSpan } from '../tracing/tracing.js';

/** Announced at an enqueuing commit with the kind's name as payload: every runner hears it. */
export const JOBS_CHANNEL = 'svc_jobs';

/** Where a kind's jobs live, and what of each row its handler gets. */
export interface JobStorage<Fields extends Record<string, unknown>> {
  table: PgTable;
  workspaceId: PgColumn;
  id: PgColumn;
  /** When the row is next due; a claim pushes it a lease ahead. */
  dueAt: PgColumn;
  /** The attempts counted so far (with the lease, the fence of an outcome). */
  attempts: PgColumn;
  /**
   * When an attempt counts: at its claim (a process that died mid-job used one), or only
   * once it ended (what a delivery shows: attempts made and answered). @default 'claim'
   */
  countAt?: 'claim' | 'outcome';
  /** Retries stop `retry.windowMs` after this instant (the message's arrival, the first attempt). */
  windowFrom: SQL | PgColumn;
  /** The rows still to run (their state column, their kind). */
  pending: SQL;
  /** A column whose rows share `groupCap` slots per process (a delivery's webhook). */
  group?: PgColumn;
  /** More assignments the claim makes, by column name (`first_attempt_at = coalesce(...)`). */
  onClaim?: Record<string, SQL>;
  /** What the handler gets of each claimed row: a column or an expression, by name. */
  fields: { [K in keyof Fields]: SQL | PgColumn };
  /**
   * Writes a failed attempt in the kind's own words (its error column; when `final`, the
   * state that ends it), inside the transaction that rescheduled the row.
   */
  recordFailure(tx: Db, job: ClaimedJob<Fields>, failure: JobFailureRecord): Promise<void>;
}

export interface JobFailureRecord {
  /** The failure's message, at most 200 characters. */
  error: string;
  /** What the handler attached to its JobRetry (an answer's status…). */
  detail: unknown;
  /** The retry window has run out: no further attempt. */
  final: boolean;
}

export type ClaimedJob<Fields> = Fields & {
  workspaceId: string;
  id: string;
  /** This attempt's number (1 on the first). */
  attempt: number;
  /** The lease the claim set (the due column's exact value): with `attempt`, the fence. */
  lease: string;
  /**
   * Where the claim left the row (its ctid), so a batch of outcomes finds each row without
   * a join the planner could turn into a scan of every pending row (`heldAt`).
   */
  row: string;
};

/**
 * The row of `storage` that still holds `job`'s claim (its lease and its attempt), so a
 * runner whose lease ran out never overwrites the outcome of the one that took over.
 */
export function stillHeld(
  storage: Pick<
    JobStorage<Record<string, unknown>>,
    'workspaceId' | 'id' | 'dueAt' | 'attempts' | 'pending' | 'countAt'
  >,
  job: { workspaceId: string; id: string; attempt: number; lease: string },
): SQL {
  const counted = storage.countAt === 'outcome' ? job.attempt - 1 : job.attempt;
  return sql`${storage.workspaceId} = ${job.workspaceId} and ${storage.id} = ${job.id}
    and ${storage.pending} and ${storage.attempts} = ${counted}
    and ${storage.dueAt} = ${job.lease}::timestamptz`;
}

/**
 * `stillHeld` for a batch: the row of `storage` at `held.t` (the ctid its claim left it
 * at), still the row `held.i` and holding that claim, for each row of `held`, a set of
 * (t tid, i uuid, attempt int, lease text) the caller unnests. The id is checked as well:
 * rows claimed together share their lease, and a slot a rewrite freed may hold another.
 * A tid join is one lookup per row whatever the statistics say (the rest is one
 * `(…) is true`, as in `claimJobs`, so no partial index competes); a row moved since its
 * claim (VACUUM FULL) is not found, so the caller settles the rows it missed by key
 * (`stillHeld`).
 */
export function heldAt(
  storage: Pick<
    JobStorage<Record<string, unknown>>,
    'table' | 'id' | 'dueAt' | 'attempts' | 'pending' | 'countAt'
  >,
  held: string,
): SQL {
  const alias = sql.identifier(held);
  const counted = storage.countAt === 'outcome' ? sql`${alias}.attempt - 1` : sql`${alias}.attempt`;
  return sql`${storage.table}.ctid = ${alias}.t and ${storage.id} = ${alias}.i and (${storage.pending}
    and ${storage.attempts} = ${counted} and ${storage.dueAt} = ${alias}.lease::timestamptz) is true`;
}

export interface JobContext {
  database: Database;
  config: Config;
  log: Logger;
}

/** A job whose work is done, with what its outcome write needs (`JobKind.settle`). */
export interface DoneJob<Fields, Outcome> {
  job: ClaimedJob<Fields>;
  outcome: Outcome;
}

export interface JobKind<Fields extends Record<string, unknown>, Outcome = never> {
  /** Unique; the NOTIFY payload that wakes its runners. */
  name: string;
  storage: JobStorage<Fields>;
  /**
   * Does the work and writes its outcome (fenced by `job.attempt`), or, with `settle`,
   * answers `{ settle: outcome }` to have the runner write it. Throwing JobRetry records
   * its message and retries; any other error is logged and retried as unexpected.
   */
  run(job: ClaimedJob<Fields>, context: JobContext): Promise<void | { settle: Outcome }>;
  /**
   * Writes the outcomes of jobs whose work is done, many in one statement, each only
   * while its row still holds its claim. A job that answers `{ settle }` frees its slot
   * (and its group's) there and then: the next claim need not wait for the write. The
   * runner writes the first outcome at once and those that come while a write is under
   * way or within SETTLE_INTERVAL_MS of its start together in the next (at most
   * SETTLE_BATCH). When the write fails, each of its jobs is a failed attempt
   * (`unexpected: …`), as a throw from `run` would be.
   */
  settle?(db: Db, done: readonly DoneJob<Fields, Outcome>[]): Promise<void>;
  /** A claim holds its row this long: longer than one attempt can take. */
  leaseMs: number;
  retry: {
    /** The wait after the n-th failed attempt (1-based). */
    delayMs(attempt: number): number;
    windowMs: number;
  };
  /** At most this many in flight per process; never above SVC_JOBS_CONCURRENCY. */
  concurrency?: number;
  /** At most this many of one group (`storage.group`) in flight per process. */
  groupCap?: number;
}

/** A failure worth retrying; its message is recorded (keep secrets out of it). */
export class JobRetry extends Error {
  constructor(
    message: string,
    readonly detail: unknown = null,
  ) {
    super(message);
  }
}

/** A column's name in the database (the tables are declared with snake_case casing). */
function columnName(column: PgColumn) {
  return sql.identifier(column.keyAsName ? toSnakeCase(column.name) : column.name);
}

/** Outcomes a runner writes in one `settle` at most. */
export const SETTLE_BATCH = 500;

/**
 * The least time from one outcome write's start to the next (SETTLE_INTERVAL_MS). An
 * outcome frees its job's slot before it is written, so waiting delays no job: the
 * outcomes of the interval go in one statement (bench:webhooks: about half the writes
 * of a burst, a sixth less PostgreSQL CPU per delivery).
 */
export const SETTLE_INTERVAL_MS = 10;

/**
 * Batches `write`: the first entry is written at once, and those pushed while a write is
 * under way, or within `intervalMs` of its start, go together in the next (at most
 * SETTLE_BATCH), so a burst settles in a statement per batch, not per job. Each push
 * resolves once its batch is written.
 */
export function batchedWriter<T>(
  write: (batch: T[]) => Promise<void>,
  intervalMs = 0,
): (entry: T) => Promise<void> {
  const queue: { entry: T; done: () => void; fail: (error: unknown) => void }[] = [];
  let writing = false;
  let lastWriteAt = -Infinity;
  async function drain(): Promise<void> {
    writing = true;
    while (queue.length > 0) {
      const since = performance.now() - lastWriteAt;
      if (since < intervalMs) {
        await new Promise((resolve) => setTimeout(resolve, intervalMs - since));
      }
      lastWriteAt = performance.now();
      const batch = queue.splice(0, SETTLE_BATCH);
      try {
        await write(batch.map(({ entry }) => entry));
        for (const { done } of batch) done();
      } catch (error) {
        for (const { fail } of batch) fail(error);
      }
    }
    writing = false;
  }
  return (entry) =>
    new Promise<void>((done, fail) => {
      queue.push({ entry, done, fail });
      if (!writing) void drain();
    });
}

/** Failure text kept on a row at most. */
export const JOB_ERROR_MAX = 200;

/**
 * The most one workspace may hold of `concurrency` slots: all but a quarter (at least one),
 * so another workspace's job always finds a slot however slow the first one's jobs are.
 */
export function workspaceShare(concurrency: number): number {
  return Math.max(1, concurrency - Math.max(1, Math.floor(concurrency / 4)));
}

export interface ClaimOptions {
  limit: number;
  leaseMs: number;
  /** At most this many of one workspace, counting `running`. */
  perWorkspace: number;
  /** In flight in this process, by workspace id. */
  running: ReadonlyMap<string, number>;
  groupCap?: number;
  /** In flight in this process, by group value. */
  runningGroups?: ReadonlyMap<string, number>;
}

/** `(key, used)` rows of the placeholders `<name>Keys` and `<name>Used` (`claimValues`). */
function unnest(name: 'running' | 'groups', type: 'uuid' | 'text') {
  return sql`unnest(${sql.placeholder(`${name}Keys`)}::${sql.raw(type)}[],
    ${sql.placeholder(`${name}Used`)}::int[])`;
}

/** What fills a claim statement's placeholders. */
function claimValues(options: ClaimOptions): Record<string, unknown> {
  const split = (map: ReadonlyMap<string, number> | undefined) => {
    const keys = [...(map?.keys() ?? [])];
    return [keys, keys.map((key) => map?.get(key) ?? 0)] as const;
  };
  const [runningKeys, runningUsed] = split(options.running);
  const [groupsKeys, groupsUsed] = split(options.runningGroups);
  return {
    limit: options.limit,
    leaseMs: options.leaseMs,
    perWorkspace: options.perWorkspace,
    groupCap: options.groupCap ?? 0,
    runningKeys,
    runningUsed,
    groupsKeys,
    groupsUsed,
  };
}

/**
 * The due rows a grouped claim ranks: each group's first `groupCap` due rows less what
 * the group already runs here, the groups found by skipping from one (workspace, group)
 * of the pending rows to the next. A claim so reads a few index entries per group, never
 * every pending row: the storage needs an index on (workspace, group, due, id) of its
 * pending rows (webhook_deliveries_pending_claim_idx). Each group's rows are read as the
 * first entries from (workspace, group) on in that index's order, then kept when they are
 * the group's and due (its due rows come first): a range the planner, whatever statistics
 * it has, estimates as many rows and so reads in that index's order, where equality on
 * (workspace, group) estimated as one row let it pick another index and sort every row.
 */
function groupedDueRows(s: JobStorage<Record<string, unknown>>): SQL {
  const group = s.group!;
  return sql`pairs as (
      (select ${s.workspaceId} as w, ${group} as g from ${s.table}
        where ${s.pending} order by ${s.workspaceId}, ${group}, ${s.dueAt} limit 1)
      union all
      (select n.w, n.g from pairs p cross join lateral (
        select ${s.workspaceId} as w, ${group} as g from ${s.table}
        where ${s.pending} and (${s.workspaceId}, ${group}) > (p.w, p.g)
        order by ${s.workspaceId}, ${group}, ${s.dueAt} limit 1) n)
    ), due_rows as (
      select c.w, c.i, c.t, c.due from pairs p
      left join ${unnest('groups', 'text')} as gu(g, used) on gu.g = p.g::text
      cross join lateral (
        select ${s.workspaceId} as w, ${group} as g, ${s.id} as i, ${s.table}.ctid as t,
          ${s.dueAt} as due
        from ${s.table}
        where ${s.pending}
          and (${s.workspaceId}, ${group}, ${s.dueAt}) >= (p.w, p.g, '-infinity'::timestamptz)
        order by ${s.workspaceId}, ${group}, ${s.dueAt}, ${s.id}
        limit greatest(0, ${sql.placeholder('groupCap')} - coalesce(gu.used, 0))) c
      where c.w = p.w and c.g = p.g and c.due <= now()
    )`;
}

/**
 * Claims due rows of `storage` in one statement: round-robin across workspaces (each
 * workspace's n-th due row, counting what it already runs here, before anyone's n+1-th),
 * within each workspace's and each group's room, locked FOR UPDATE SKIP LOCKED, counted
 * and leased. The picked rows are locked and updated by their ctid, read in the same
 * statement: a lookup per row whatever the statistics say. Their conditions are checked
 * again as one `(…) is true`, which no partial index's predicate follows from, so a
 * partial index of pending rows that stale statistics call empty is never scanned whole
 * in place of those lookups (autovacuum may be off; a burst makes statistics stale).
 */
export async function claimJobs<Fields extends Record<string, unknown>>(
  db: Db,
  storage: JobStorage<Fields>,
  options: ClaimOptions,
): Promise<ClaimedJob<Fields>[]> {
  if (options.limit <= 0) return [];
  const grouped = storage.group !== undefined && options.groupCap !== undefined;
  let statements = claimStatements.get(storage);
  if (!statements) {
    statements = new Map();
    claimStatements.set(storage, statements);
  }
  let run = statements.get(grouped);
  if (!run) {
    run = preparedSql(() =>
      claimStatement(storage as JobStorage<Record<string, unknown>>, grouped),
    );
    statements.set(grouped, run);
  }
  return (await run(db, claimValues(options))) as ClaimedJob<Fields>[];
}

/** Each storage's claim, built once per shape (grouped or not) and prepared (`preparedSql`). */
const claimStatements = new WeakMap<
  object,
  Map<boolean, (db: Db, values: Record<string, unknown>) => Promise<unknown[]>>
>();

/** The claim of `claimJobs`, its values as placeholders (`claimValues`). */
function claimStatement(s: JobStorage<Record<string, unknown>>, grouped: boolean): SQL {
  const name = columnName;
  const byClaim = s.countAt !== 'outcome';
  const sets = [
    sql`${name(s.dueAt)} = now() + ${sql.placeholder('leaseMs')} * interval '1 millisecond'`,
    ...(byClaim ? [sql`${name(s.attempts)} = ${s.attempts} + 1`] : []),
    ...Object.entries(s.onClaim ?? {}).map(
      ([column, value]) => sql`${sql.identifier(column)} = ${value}`,
    ),
  ];
  const fields = Object.entries(s.fields).map(
    ([key, value]) => sql`${value} as ${sql.identifier(key)}`,
  );
  return sql`
    with recursive ${
      grouped
        ? groupedDueRows(s)
        : sql`due_rows as (
      select ${s.workspaceId} as w, ${s.id} as i, ${s.table}.ctid as t, ${s.dueAt} as due
      from ${s.table}
      where ${s.pending} and ${s.dueAt} <= now()
    )`
    }, ranked as (
      select d.w, d.i, d.t, d.due,
        row_number() over (partition by d.w order by d.due, d.i) as nth
      from due_rows d
    ), picked as (
      select r.t from ranked r
      left join ${unnest('running', 'uuid')} as u(w, used) on u.w = r.w
      where r.nth <= ${sql.placeholder('perWorkspace')} - coalesce(u.used, 0)
      order by r.nth + coalesce(u.used, 0), r.due, r.i
      limit ${sql.placeholder('limit')}
    ), due as (
      select ctid as t from ${s.table}
      where ctid = any(array(select t from picked))
        and (${s.pending} and ${s.dueAt} <= now()) is true
      for update skip locked
    )
    update ${s.table} set ${sql.join(sets, sql`, `)}
    from due
    where ${s.table}.ctid = due.t
    returning ${s.workspaceId} as "workspaceId", ${s.id} as "id",
      ${byClaim ? sql`${s.attempts}` : sql`${s.attempts} + 1`} as "attempt",
      ${s.dueAt}::text as "lease", ${s.table}.ctid::text as "row"
      ${s.group ? sql`, ${s.group}::text as "__group"` : sql``}
      ${fields.length ? sql`, ${sql.join(fields, sql`, `)}` : sql``}`;
}

/**
 * A failed attempt: the row is due again after `delayMs`, never later than the end of the
 * retry window, or final once the window has run out (both in the database's clock); then
 * `recordFailure` writes it in the kind's words. Nothing when the row no longer holds the
 * attempt (its lease ran out and another runner took it over).
 */
export async function recordJobFailure<Fields extends Record<string, unknown>>(
  db: Db,
  kind: Pick<JobKind<Fields>, 'storage' | 'retry'>,
  job: ClaimedJob<Fields>,
  error: string,
  detail: unknown = null,
): Promise<'retrying' | 'failed' | 'lost'> {
  const s = kind.storage;
  const windowEnd = sql`(${s.windowFrom}) + ${kind.retry.windowMs} * interval '1 millisecond'`;
  const waitMs = kind.retry.delayMs(job.attempt);
  const count =
    s.countAt === 'outcome' ? sql`, ${columnName(s.attempts)} = ${s.attempts} + 1` : sql``;
  return db.transaction(async (tx) => {
    const [row] = (await tx.execute(sql`
      update ${s.table}
      set ${columnName(s.dueAt)} = case when now() >= ${windowEnd} then ${s.dueAt}
        else least(now() + ${waitMs} * interval '1 millisecond', ${windowEnd}) end ${count}
      where ${stillHeld(s, job)}
      returning now() >= ${windowEnd} as final`)) as unknown as { final: boolean }[];
    if (!row) return 'lost';
    const final = row.final;
    await s.recordFailure(tx as unknown as Db, job, {
      error: error.slice(0, JOB_ERROR_MAX),
      detail,
      final,
    });
    return final ? 'failed' : 'retrying';
  });
}

export interface RunnerOptions {
  database: Database;
  config: Config;
  log: Logger;
  /** In flight at once in this process. @default min(kind.concurrency, SVC_JOBS_CONCURRENCY) */
  concurrency?: number;
  /** How often due rows are looked for without a notice (retries coming due). @default 1000 */
  pollMs?: number;
  /**
   * The least time from one claim's start to the next (CLAIM_INTERVAL_MS). A wake-up
   * sooner waits for it: under a burst, the notices and finished jobs of those
   * milliseconds make one claim, not one each. After a quiet spell a claim starts at once.
   */
  claimIntervalMs?: number;
  /** The least time from one outcome write's start to the next (SETTLE_INTERVAL_MS). */
  settleIntervalMs?: number;
}

/**
 * The least time between two claims of one runner. Every process hears each enqueuing
 * commit and each finished job wakes its runner: at a burst's hundreds of notices a
 * second, a claim for each cost more than the jobs did (bench:webhooks: 2 ms of service
 * and 2 ms of PostgreSQL CPU per delivery). 10 ms claims at most 100 times a second per
 * process and adds at most 10 ms to a job's start. A claim cut short by a cap (one
 * webhook's 8 slots a process, PER_WEBHOOK) is followed as soon as its jobs have freed
 * their slots, so a backlog is not held to 8 per interval (docs/performance.md).
 */
export const CLAIM_INTERVAL_MS = 10;

export interface JobRunner {
  /** Looks for due jobs now rather than at the next poll. */
  wake(): void;
  /** Whether NOTIFY wakes the runner (false: the LISTEN failed, polling only). */
  listening: Promise<boolean>;
  /** Stops claiming and waits for the jobs in flight. */
  stop(): Promise<void>;
}

/** This process's runners by kind, for wakeJobs. */
const live = new Map<string, Set<JobRunner>>();

/**
 * Wakes this process's runners of a kind now (after a commit that made jobs due without
 * enqueueJob's NOTIFY); other processes find them at their next poll.
 */
export function wakeJobs(kindName: string): void {
  for (const runner of live.get(kindName) ?? []) runner.wake();
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs `kind` in this process until stopped. */
export function startJobRunner<Fields extends Record<string, unknown>, Outcome = never>(
  kind: JobKind<Fields, Outcome>,
  options: RunnerOptions,
): JobRunner {
  const { database, config, log } = options;
  const concurrency =
    options.concurrency ?? Math.min(kind.concurrency ?? Infinity, config.jobs.concurrency);
  const perWorkspace = workspaceShare(concurrency);
  const context: JobContext = { database, config, log };
  /** Every job not yet ended, its outcome write included (stop waits for them). */
  const inFlight = new Set<Promise<void>>();
  /** Jobs holding a slot: claimed, their work not yet done. */
  let held = 0;
  const settle = kind.settle;
  const settleLater = settle
    ? batchedWriter<DoneJob<Fields, Outcome>>(
        (batch) => settle(database.db, batch),
        options.settleIntervalMs ?? SETTLE_INTERVAL_MS,
      )
    : null;
  const running = new Map<string, number>();
  const runningGroups = new Map<string, number>();
  let stopped = false;
  let claiming = false;
  let again = false;
  let claimRun: Promise<void> | null = null;
  const claimIntervalMs = options.claimIntervalMs ?? CLAIM_INTERVAL_MS;
  /** When the last claim started (performance.now()), and the wake-up waiting for the interval. */
  let lastClaimAt = -Infinity;
  let waiting: { timer: NodeJS.Timeout; resolve: () => void } | null = null;
  /** Claims made so far (a job knows which one took it). */
  let claimNo = 0;
  /**
   * When the last claim was cut short by a cap (its room, a workspace's share, a group's
   * cap) rather than by what was due, its jobs still holding their slots; -1 otherwise.
   * More are likely due: once that claim's jobs have all freed their slots, the next
   * claim starts without waiting out the interval, so a deep backlog is claimed as fast
   * as its jobs end (8 rows a claim for one webhook), not 8 per interval.
   */
  let cappedOpen = -1;

  const count = (map: Map<string, number>, key: string, by: number) => {
    const next = (map.get(key) ?? 0) + by;
    if (next > 0) map.set(key, next);
    else map.delete(key);
  };

  const labels = { kind: kind.name };

  /** One attempt, timed, counted and (tracing on) in a span of its own trace. */
  async function attempt(job: ClaimedJob<Fields>, release: () => void): Promise<void> {
    const startedAt = performance.now();
    jobMetrics.inFlight.inc(labels);
    try {
      await withSpan(
        `job ${kind.name}`,
        {
          kind: SpanKind.CONSUMER,
          parent: 'root',
          attributes: { 'job.kind': kind.name, 'job.attempt': job.attempt },
        },
        () => runOnce(job, release),
      );
    } finally {
      jobMetrics.inFlight.dec(labels);
      jobMetrics.duration.observe(labels, (performance.now() - startedAt) / 1000);
    }
  }

  async function runOnce(job: ClaimedJob<Fields>, release: () => void): Promise<void> {
    try {
      const done = await kind.run(job, context);
      if (done && !settleLater)
        throw new Error(`${kind.name} answered an outcome but has no settle`);
      if (done && settleLater) {
        // The work is done: its slot takes the next job while the outcome is written.
        release();
        await settleLater({ job, outcome: done.settle });
      }
      jobMetrics.succeeded.inc(labels);
    } catch (error) {
      const retry = error instanceof JobRetry;
      if (!retry) log.error({ err: error, job: kind.name, id: job.id }, 'job failed unexpectedly');
      const message = retry ? error.message : `unexpected: ${describe(error)}`;
      const outcome = await recordJobFailure(
        database.db,
        kind,
        job,
        message,
        retry ? error.detail : null,
      );
      if (outcome === 'failed') jobMetrics.failed.inc(labels);
      if (outcome === 'retrying') jobMetrics.retried.inc(labels);
      if (outcome !== 'lost') {
        log.warn(
          { job: kind.name, id: job.id, attempt: job.attempt, error: message.slice(0, 200) },
          outcome === 'failed' ? 'job failed; out of retries' : 'job failed; retrying later',
        );
      }
    }
  }

  async function claimDue(): Promise<void> {
    try {
      do {
        again = false;
        const room = concurrency - held;
        if (room <= 0 || stopped) break;
        const sinceLast = performance.now() - lastClaimAt;
        if (sinceLast < claimIntervalMs && cappedOpen !== 0) {
          // Soon again: what comes due meanwhile joins the next claim.
          await new Promise<void>((resolve) => {
            waiting = { timer: setTimeout(resolve, claimIntervalMs - sinceLast), resolve };
          });
          waiting = null;
          if (stopped) break;
        }
        lastClaimAt = performance.now();
        const jobs = await claimJobs(database.db, kind.storage, {
          limit: room,
          leaseMs: kind.leaseMs,
          perWorkspace,
          running,
          groupCap: kind.groupCap,
          runningGroups,
        });
        if (jobs.length) jobMetrics.claimed.inc(labels, jobs.length);
        claimNo += 1;
        const claim = claimNo;
        let capped = jobs.length === room;
        for (const job of jobs) {
          const group = (job as { __group?: string }).__group ?? null;
          held += 1;
          count(running, job.workspaceId, 1);
          if (group !== null) count(runningGroups, group, 1);
          if ((running.get(job.workspaceId) ?? 0) >= perWorkspace) capped = true;
          if (group !== null && (runningGroups.get(group) ?? 0) >= (kind.groupCap ?? Infinity)) {
            capped = true;
          }
          let released = false;
          const release = () => {
            if (released) return;
            released = true;
            held -= 1;
            count(running, job.workspaceId, -1);
            if (group !== null) count(runningGroups, group, -1);
            if (claim === claimNo && cappedOpen > 0) {
              cappedOpen -= 1;
              // The capped claim's slots are all free: claim now, not at the interval.
              if (cappedOpen === 0 && waiting) {
                clearTimeout(waiting.timer);
                waiting.resolve();
              }
            }
            tick();
          };
          const done: Promise<void> = attempt(job, release)
            .catch((error: unknown) =>
              log.error({ err: error, job: kind.name, id: job.id }, 'job outcome not recorded'),
            )
            .finally(() => {
              inFlight.delete(done);
              release();
            });
          inFlight.add(done);
        }
        cappedOpen = capped && jobs.length > 0 ? jobs.length : -1;
        if (jobs.length === room) again = true;
      } while (again);
    } catch (error) {
      // A failover or restart of PostgreSQL: the next poll claims once it is back.
      if (stopped) return;
      if (isDatabaseUnavailable(error))
        log.warn({ job: kind.name }, 'job runner could not claim: database unavailable');
      else log.error({ err: error, job: kind.name }, 'job runner could not claim');
    }
  }

  function tick(): void {
    if (stopped) return;
    if (claiming) {
      again = true;
      return;
    }
    claiming = true;
    claimRun = claimDue().finally(() => {
      claiming = false;
      claimRun = null;
    });
  }

  const timer = setInterval(tick, options.pollMs ?? 1000);
  timer.unref();
  // Every process hears each enqueuing commit; the claims' SKIP LOCKED shares the jobs out.
  // Until the LISTEN is up (or while it reconnects) the poll alone finds them.
  const listener = database.sql
    .listen(
      JOBS_CHANNEL,
      (payload) => {
        if (payload === kind.name) tick();
      },
      tick,
    )
    .catch((error: unknown) => {
      log.warn({ err: error, job: kind.name }, 'job runner could not listen; polling only');
      return null;
    });
  tick();
  const runner: JobRunner = {
    wake: tick,
    listening: listener.then((listen) => listen !== null),
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (waiting) {
        clearTimeout(waiting.timer);
        waiting.resolve();
      }
      live.get(kind.name)?.delete(runner);
      await (await listener)?.unlisten().catch(() => {});
      // Rows a claim in progress takes are started before it ends: wait for it first.
      await claimRun;
      await Promise.allSettled([...inFlight]);
    },
  };
  live.set(kind.name, (live.get(kind.name) ?? new Set()).add(runner));
  return runner;
}

/** The NOTIFY of an enqueuing commit, as a statement of the caller's transaction. */
export function notifyJobs(kindName: string): SQL {
  return sql`pg_notify(${JOBS_CHANNEL}, ${kindName})`;
}
