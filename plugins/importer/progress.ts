// Progress of the work running on an import (staging or committing), rows done of rows.
// The work runs in one transaction that other requests can't see into, so its progress is
// written beside it, each step committed at once, and read with the import.
import { and, eq, sql } from 'drizzle-orm';
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

  /** `rows` more are done. */
  async advance(rows: number): Promise<void> {
    this.done = Math.min(this.total, this.done + rows);
    await this.db.update(importProgress).set({ done: this.done }).where(this.row());
  }

  /** The work ended, whichever way: nothing is running any more. */
  async end(): Promise<void> {
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
 * The import as a reader sees it. Work can't outlive its request's deadline, so progress
 * older than that belongs to a process that died: staging that never finished reads as
 * `failed`, a commit that never finished left the import as it was (a transaction).
 */
export function viewOf(
  job: Import,
  progress: ProgressView | null,
  deadlineMs: number,
  now = Date.now(),
): ImportView {
  const alive = (since: Date) => now - since.getTime() < deadlineMs;
  const live = progress && alive(progress.startedAt) ? progress : null;
  if (job.state === 'staging' && !alive(job.createdAt)) {
    return { ...job, state: 'failed', progress: null };
  }
  if (live?.stage === 'committing' && job.state === 'mapped') {
    return { ...job, state: 'committing', progress: live };
  }
  return { ...job, progress: live };
}
