import { lt, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rateEvents } from './tables.js';

export interface Budget {
  bucket: 'login' | 'reset';
  key: string;
  limit: number;
  windowMs: number;
}

/**
 * Seconds until `budget` allows another attempt, or 0 when it allows one now. Attempts
 * live in PostgreSQL, so every server process spends from the same budget.
 */
export async function waitBeforeAttempt(db: Db, budget: Budget): Promise<number> {
  const [row] = await db.execute<{ count: number; oldest: string | null }>(sql`
    select count(*)::int as count, min(${rateEvents.at})::text as oldest
    from ${rateEvents}
    where ${rateEvents.bucket} = ${budget.bucket} and ${rateEvents.key} = ${budget.key}
      and ${rateEvents.at} > now() - make_interval(secs => ${budget.windowMs / 1000})`);
  if (!row || row.count < budget.limit || !row.oldest) return 0;
  const freesAt = new Date(row.oldest).getTime() + budget.windowMs;
  return Math.max(1, Math.ceil((freesAt - Date.now()) / 1000));
}

export async function spendAttempt(db: Db, budget: Pick<Budget, 'bucket' | 'key'>): Promise<void> {
  await db.insert(rateEvents).values({ bucket: budget.bucket, key: budget.key });
}

/** Drops attempts older than any window still counting them. */
export async function deleteOldAttempts(db: Db, olderThanMs: number): Promise<void> {
  await db
    .delete(rateEvents)
    .where(lt(rateEvents.at, sql`now() - make_interval(secs => ${olderThanMs / 1000})`));
}
