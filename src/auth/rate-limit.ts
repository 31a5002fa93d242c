import { eq, lt, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rateEvents } from './tables.js';

/** First key of the per-budget advisory lock ("rate" in ASCII). */
const RATE_LOCK = 0x72617465;

export interface Budget {
  bucket: 'login' | 'reset';
  key: string;
  limit: number;
  windowMs: number;
}

/** May go ahead, holding the attempt `attemptId`; or must wait `retryAfter` seconds. */
export type Attempt = { attemptId: string } | { retryAfter: number };

/**
 * Counts `budget`'s window and records this attempt in one step. A transaction-scoped
 * advisory lock on bucket and key serialises the count and the insert, so of any number
 * of concurrent attempts, on any number of processes sharing the database, at most
 * `limit` within the window go ahead. The attempt counts from the moment it is taken
 * (while its outcome is unknown it must, or a burst would be checked unbounded);
 * `refundAttempt` gives it back.
 */
export async function takeAttempt(db: Db, budget: Budget): Promise<Attempt> {
  const window = sql`make_interval(secs => ${budget.windowMs / 1000})`;
  return db.transaction(async (tx) => {
    await tx.execute(
      sql`select pg_advisory_xact_lock(${RATE_LOCK}::int, hashtext(${`${budget.bucket}:${budget.key}`}))`,
    );
    // clock_timestamp, not now(): the transaction began before the lock was granted.
    const [row] = await tx.execute<{ count: number; wait: number | null }>(sql`
      select count(*)::int as count,
        ceil(extract(epoch from min(${rateEvents.at}) + ${window} - clock_timestamp()))::int as wait
      from ${rateEvents}
      where ${rateEvents.bucket} = ${budget.bucket} and ${rateEvents.key} = ${budget.key}
        and ${rateEvents.at} > (select clock_timestamp()) - ${window}`);
    if (row && row.count >= budget.limit) return { retryAfter: Math.max(1, row.wait ?? 1) };
    const [taken] = await tx
      .insert(rateEvents)
      .values({ bucket: budget.bucket, key: budget.key, at: sql`clock_timestamp()` })
      .returning({ id: rateEvents.id });
    return { attemptId: (taken as { id: string }).id };
  });
}

/** Gives an attempt back to its budget, as if it had never been taken. */
export async function refundAttempt(db: Db, attemptId: string): Promise<void> {
  await db.delete(rateEvents).where(eq(rateEvents.id, attemptId));
}

/** Drops attempts older than any window still counting them; answers how many went. */
export async function deleteOldAttempts(db: Db, olderThanMs: number): Promise<number> {
  const gone = await db
    .delete(rateEvents)
    .where(lt(rateEvents.at, sql`now() - make_interval(secs => ${olderThanMs / 1000})`))
    .returning({ id: rateEvents.id });
  return gone.length;
}
