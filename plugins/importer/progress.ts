// Progress of the work running on an import (staging or committing), rows done of rows.
// The work runs in one transaction that other requests can't see into, so its progress is
// written beside it, each step committed at once, and read with the import.
import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../src/plugin-sdk/index.js';
import { importProgress, type Import, type ImportProgress } from './tables.js';

export type Stage = 'staging' | 'committing';

/** What a reader sees: the stage and the rows done of its rows. */
export type ProgressView = Pick<ImportProgress, 'stage' | 'done' | 'total' | 'startedAt'>;

/** An import as the graph answers it: the stored row, its live progress, its state. */
export type ImportView = Import & { progress: ProgressView | null };

/**
 * Reports one piece of work's progress. `db` must not be the work's transaction: each
 * step commits on its own so it is seen while the transaction is still open.
 */
export class ProgressReport {
  private done = 0;

  private constructor(
    private readonly db: Db,
    private readonly job: Pick<Import, 'workspaceId' | 'id'>,
    private readonly total: number,
  ) {}

  static async start(
    db: Db,
    job: Pick<Import, 'workspaceId' | 'id'>,
    stage: Stage,
    total: number,
  ): Promise<ProgressReport> {
    const row = { workspaceId: job.workspaceId, importId: job.id, stage, done: 0, total };
    await db
      .insert(importProgress)
      .values(row)
      .onConflictDoUpdate({
        target: [importProgress.workspaceId, importProgress.importId],
        set: { stage, done: 0, total, startedAt: sql`now()` },
      });
    return new ProgressReport(db, job, total);
  }

  /** The steps written so far, in order: rejected with the first that failed. */
  private writing: Promise<void> = Promise.resolve();

  /**
   * `rows` more are done: written once the steps before it are, each committed on its own.
   * Answers once written, or with the first step's failure; the work may go on meanwhile
   * (a commit doesn't wait out a step's commit before writing its next batch).
   */
  advance(rows: number): Promise<void> {
    this.done = Math.min(this.total, this.done + rows);
    const done = this.done;
    const step = this.writing.then(async () => {
      await this.db.update(importProgress).set({ done }).where(this.row());
    });
    this.writing = step;
    step.catch(() => {}); // the caller hears of a failure when it waits for a step
    return step;
  }

  /** Once every step so far is written: rejected with the first that failed. */
  async settled(): Promise<void> {
    await this.writing;
  }

  /** The work ended, whichever way: nothing is running any more. */
  async end(): Promise<void> {
    await this.writing.catch(() => {});
    await this.db.delete(importProgress).where(this.row());
  }

  private row() {
    return and(
      eq(importProgress.workspaceId, this.job.workspaceId),
      eq(importProgress.importId, this.job.id),
    );
  }
}

/**
 * The advisory lock a commit's transaction holds while it runs: PostgreSQL lets it go the
 * moment the transaction ends, however it ends (a process killed, a connection cut), so a
 * reader that finds it free knows the commit is no longer running. Keyed by a 64-bit hash
 * of the import's id; two imports sharing one (a chance of one in 2^64) would only make a
 * dead commit read as running until the other's commit ends.
 */
function commitMarker(importId: SQL | string): SQL {
  return sql`hashtextextended('importer.commit:' || ${importId}::text, 0)`;
}

/** Takes the commit's marker for `tx`, the commit's own transaction. */
export async function holdCommitMarker(tx: Db, job: Pick<Import, 'id'>): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${commitMarker(job.id)})`);
}

/**
 * Whether the commit of the import whose id is `importId` (a column) runs: a transaction
 * holds its marker. Read from pg_locks, taking no lock, so a reader never stands in the
 * way of a commit starting.
 */
export function commitRunning(importId: SQL): SQL<boolean> {
  return sql<boolean>`exists (
    select 1 from pg_locks as held, (select ${commitMarker(importId)} as key) as marker
    where held.locktype = 'advisory' and held.granted and held.objsubid = 1
      and held.database = (select oid from pg_database where datname = current_database())
      and held.classid::bigint = (marker.key >> 32) & 4294967295
      and held.objid::bigint = marker.key & 4294967295)`;
}

/**
 * The import as a reader sees it. Progress of a commit reads only while the commit holds
 * its marker (`committing` is null when unknown, then judged by the deadline): a commit
 * whose process died left the import as it was (a transaction), `mapped` and committable.
 * Staging can't outlive its request's deadline, so staging older than that belongs to a
 * process that died and reads as `failed`.
 */
export function viewOf(
  job: Import,
  progress: ProgressView | null,
  deadlineMs: number,
  committing: boolean | null = null,
  now = Date.now(),
): ImportView {
  const alive = (since: Date) => now - since.getTime() < deadlineMs;
  const live =
    progress &&
    alive(progress.startedAt) &&
    (progress.stage !== 'committing' || committing !== false)
      ? progress
      : null;
  if (job.state === 'staging' && !alive(job.createdAt)) {
    return { ...job, state: 'failed', progress: null };
  }
  if (live?.stage === 'committing' && job.state === 'mapped') {
    return { ...job, state: 'committing', progress: live };
  }
  return { ...job, progress: live };
}
