import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { deleteOldFailedJobs } from '../jobs/index.js';
import type { Logger } from '../log.js';
import { LOGIN_FAILURES } from './login.js';
import { deleteOldAttempts } from './rate-limit.js';
import { deleteExpiredSessions } from './sessions.js';

const HOUR_MS = 60 * 60 * 1000;

/**
 * SPEC 5: expired sessions are removed hourly, with attempts no window counts any more.
 * Every process runs it; the deletes are idempotent, so several at once do no harm.
 */
export function startHousekeeping(config: Config, database: Database, log: Logger): () => void {
  const keepAttemptsMs = Math.max(LOGIN_FAILURES.windowMs, config.invitations.resetTtlMs);
  const run = async () => {
    try {
      const sessions = await deleteExpiredSessions(database.db);
      await deleteOldAttempts(database.db, keepAttemptsMs);
      // Failed background jobs are kept a week for inspection (src/jobs).
      await deleteOldFailedJobs(database.db);
      if (sessions > 0) log.info({ sessions }, 'expired sessions removed');
    } catch (error) {
      log.warn({ err: error }, 'housekeeping failed; next try in an hour');
    }
  };
  void run();
  const timer = setInterval(() => void run(), HOUR_MS);
  timer.unref();
  return () => clearInterval(timer);
}
