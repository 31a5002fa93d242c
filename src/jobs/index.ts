// Background jobs a plugin defines (docs/plugins.md, "Background jobs"): rows of the core
// `jobs` table, run by the one runner of ./runner.ts with its leases, retries, fairness
// across workspaces and bounded concurrency.
import { and, eq, lt, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import {
  heldAt,
  JobRetry,
  notifyJobs,
  stillHeld,
  type ClaimedJob,
  type JobContext,
  type JobKind,
} from './runner.js';
import { jobs } from './tables.js';

/** A job of the core table, as its handler gets it. */
export type Job<Payload> = ClaimedJob<{ payload: Payload }>;

export interface JobDefinition<Payload> {
  /** Unique across the deployment: the plugin's id first (`note.remind`). */
  kind: string;
  /**
   * The work. Returning ends the job (its row is deleted); throwing JobRetry records its
   * message and retries after a widening wait; any other error is logged and retried too.
   * Work that writes should be idempotent: a process that dies mid-job leaves it to run
   * again after the lease.
   */
  run(job: Job<Payload>, context: JobContext): Promise<void>;
  /** One attempt's longest run; a claim holds the job this long. @default 60 s */
  leaseMs?: number;
  /** The wait after the n-th failed attempt. @default min(1 h, 5 s × 2^(n-1)) */
  retryDelayMs?(attempt: number): number;
  /** Retries stop this long after the job was enqueued; it is then `failed`. @default 24 h */
  retryWindowMs?: number;
  /** At most this many in flight per process (never above SVC_JOBS_CONCURRENCY). */
  concurrency?: number;
}

/** A job kind of the core table, for `enqueueJob` and a plugin's `jobs` list. */
export type JobKindOf<Payload> = JobKind<{ payload: Payload }, null> & {
  readonly payload?: Payload;
};

/** A failed job is kept (with its error) this long after it was enqueued, then swept. */
export const JOB_FAILED_KEEP_MS = 7 * 24 * 60 * 60_000;

/** The default wait after the n-th failed attempt (1-based): min(1 h, 5 s × 2^(n-1)). */
export function defaultRetryDelayMs(attempt: number): number {
  return Math.min(60 * 60_000, 5000 * 2 ** Math.max(0, attempt - 1));
}

const defined = new Map<string, JobKind<Record<string, unknown>>>();

/** Declares a job kind stored in the core `jobs` table. */
export function defineJob<Payload>(definition: JobDefinition<Payload>): JobKindOf<Payload> {
  if (defined.has(definition.kind)) throw new Error(`job kind ${definition.kind} is defined twice`);
  const kind: JobKindOf<Payload> = {
    name: definition.kind,
    leaseMs: definition.leaseMs ?? 60_000,
    concurrency: definition.concurrency,
    retry: {
      delayMs: definition.retryDelayMs ?? defaultRetryDelayMs,
      windowMs: definition.retryWindowMs ?? 24 * 60 * 60_000,
    },
    storage: {
      table: jobs,
      workspaceId: jobs.workspaceId,
      id: jobs.id,
      dueAt: jobs.runAt,
      attempts: jobs.attempts,
      windowFrom: jobs.createdAt,
      pending: sql`${jobs.status} = 'pending' and ${jobs.kind} = ${definition.kind}`,
      fields: { payload: jobs.payload },
      async recordFailure(tx, job, failure) {
        await tx
          .update(jobs)
          .set({ lastError: failure.error, ...(failure.final ? { status: 'failed' } : {}) })
          .where(and(eq(jobs.workspaceId, job.workspaceId), eq(jobs.id, job.id)));
      },
    },
    async run(job, context) {
      await definition.run(job, context);
      return { settle: null };
    },
    // Done: the rows go (a batch in one statement), each unless its attempt's lease ran
    // out and another runner holds it now.
    async settle(db, done) {
      const column = <T>(value: (job: Job<Payload>) => T) =>
        sql.param(done.map(({ job }) => value(job)));
      const gone = (await db.execute(sql`
        delete from ${jobs}
        using unnest(${column((job) => job.row)}::tid[], ${column((job) => job.id)}::uuid[],
          ${column((job) => job.attempt)}::int[], ${column((job) => job.lease)}::text[])
          as k(t, i, attempt, lease)
        where ${heldAt(kind.storage, 'k')}
        returning ${jobs.id} as id`)) as unknown as { id: string }[];
      if (gone.length === done.length) return;
      // A row a table rewrite moved since its claim: by its key.
      const found = new Set(gone.map((row) => row.id));
      for (const { job } of done) {
        if (!found.has(job.id)) await db.delete(jobs).where(stillHeld(kind.storage, job));
      }
    },
  };
  defined.set(definition.kind, kind as never);
  return kind;
}

export interface EnqueueInput<Payload> {
  workspaceId: string;
  payload: Payload;
  /** Not before this instant. @default now */
  runAt?: Date;
}

/**
 * Enqueues a job in the caller's transaction (`tx`): it exists, and every process's runner
 * of its kind is woken, only when that transaction commits. Answers the job's id.
 */
export async function enqueueJob<Payload>(
  tx: Db,
  kind: JobKindOf<Payload>,
  input: EnqueueInput<Payload>,
): Promise<string> {
  const runAt = input.runAt ? sql`${input.runAt.toISOString()}::timestamptz` : sql`now()`;
  const [row] = (await tx.execute(sql`
    with enqueued as (
      insert into ${jobs} (workspace_id, kind, payload, run_at)
      values (${input.workspaceId}, ${kind.name}, ${JSON.stringify(input.payload)}::jsonb, ${runAt})
      returning id
    )
    select id, ${notifyJobs(kind.name)} from enqueued`)) as unknown as { id: string }[];
  return row!.id;
}

/** Housekeeping: failed jobs older than JOB_FAILED_KEEP_MS. Answers how many went. */
export async function deleteOldFailedJobs(db: Db): Promise<number> {
  const gone = await db
    .delete(jobs)
    .where(
      and(
        eq(jobs.status, 'failed'),
        lt(jobs.createdAt, sql`now() - ${JOB_FAILED_KEEP_MS} * interval '1 millisecond'`),
      ),
    )
    .returning({ id: jobs.id });
  return gone.length;
}

export { JobRetry };
export type { JobContext, JobKind };
