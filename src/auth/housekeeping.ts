import { sql } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { events } from '../events/tables.js';
import { deleteOldEvents } from '../events/queries.js';
import { deleteOldFailedJobs } from '../jobs/index.js';
import type { Logger } from '../log.js';
import type { PluginSweep } from '../plugin-host/definition.js';
import type { LoadedPlugin } from '../plugin-host/host.js';
import { LOGIN_FAILURES } from './login.js';
import { deleteOldAttempts } from './rate-limit.js';
import { deleteExpiredSessions } from './sessions.js';
import {
  deleteRemovedWebhooks,
  deleteSettledDeliveries,
  pendingDeliveryOf,
} from '../webhooks/queries.js';

const HOUR_MS = 60 * 60 * 1000;

/** Rows one round of a batched sweep deletes at most. */
export const SWEEP_BATCH = 1000;

/**
 * A sweep of a table that may hold a large backlog: `deleteRound(limit)` deletes at most
 * `limit` expired rows in one statement (so in its own short transaction) and answers how
 * many went; rounds follow one another until one removes fewer than `limit`. No round
 * holds locks or a snapshot for long, whatever the backlog, and processes sweeping at once
 * share the rows when each round picks them with FOR UPDATE SKIP LOCKED. Answers the rows
 * removed in all.
 */
export async function sweepInBatches(
  deleteRound: (limit: number) => Promise<number>,
  batch: number = SWEEP_BATCH,
): Promise<number> {
  let removed = 0;
  for (;;) {
    const round = await deleteRound(batch);
    removed += round;
    if (round < batch) return removed;
  }
}

export interface HousekeepingDeps {
  config: Config;
  database: Database;
  log: Logger;
  /** Their `sweeps` run after the core's (docs/plugins.md, "Sweeps"). */
  plugins?: readonly LoadedPlugin[];
}

/** The core's sweeps and every loaded plugin's, each named `<plugin>: <name>` for the log. */
function sweepsOf({ config, plugins = [] }: HousekeepingDeps): PluginSweep[] {
  const keepAttemptsMs = Math.max(LOGIN_FAILURES.windowMs, config.invitations.resetTtlMs);
  const keepEventsMs = config.housekeeping.eventsRetentionMs;
  return [
    { name: 'sessions', run: (db) => deleteExpiredSessions(db) },
    { name: 'attempts', run: (db) => deleteOldAttempts(db, keepAttemptsMs) },
    {
      // Expired and past the cooldown, a reset link counts for nothing: not live, and too
      // old to hold back another mail. Requests for an address add them (SVC_RESET_LINKS).
      name: 'reset links',
      run: async (db) =>
        (
          await db.execute(sql`
            delete from password_resets
             where expires_at < now() - make_interval(secs => ${config.invitations.resetCooldownMs / 1000})
            returning 1`)
        ).length,
    },
    // Failed background jobs are kept a week for inspection (src/jobs).
    { name: 'failed jobs', run: (db) => deleteOldFailedJobs(db) },
    // SVC_EVENTS_RETENTION. Settled deliveries before deleted webhooks, so a webhook whose
    // last delivery goes is removed in the same round; an event is held by pending ones only.
    {
      name: 'webhook deliveries',
      run: (db) => sweepInBatches((limit) => deleteSettledDeliveries(db, keepEventsMs, limit)),
    },
    {
      name: 'events',
      run: (db) =>
        sweepInBatches((limit) =>
          deleteOldEvents(db, keepEventsMs, pendingDeliveryOf(events), limit),
        ),
    },
    {
      name: 'deleted webhooks',
      run: (db) => sweepInBatches((limit) => deleteRemovedWebhooks(db, keepEventsMs, limit)),
    },
    ...plugins.flatMap((plugin) =>
      (plugin.definition?.sweeps ?? []).map((sweep) => ({
        name: `${plugin.manifest.id}: ${sweep.name}`,
        run: sweep.run,
      })),
    ),
  ];
}

/**
 * One round of housekeeping: every sweep once, each on its own so one failing leaves the
 * others run. Answers the rows each removed (absent when it failed).
 */
export async function runHousekeeping(deps: HousekeepingDeps): Promise<Record<string, number>> {
  const removed: Record<string, number> = {};
  for (const sweep of sweepsOf(deps)) {
    try {
      removed[sweep.name] = await sweep.run(deps.database.db);
    } catch (error) {
      deps.log.warn({ err: error, sweep: sweep.name }, 'housekeeping failed; next try in an hour');
    }
  }
  const busy = Object.fromEntries(Object.entries(removed).filter(([, count]) => count > 0));
  if (Object.keys(busy).length > 0) deps.log.info({ removed: busy }, 'expired rows removed');
  return removed;
}

/**
 * SPEC 5: expired sessions are removed hourly, with attempts no window counts any more and
 * whatever the plugins' sweeps expire. Every process runs it; the deletes are idempotent,
 * so several at once do no harm.
 */
export function startHousekeeping(deps: HousekeepingDeps): () => void {
  void runHousekeeping(deps);
  const timer = setInterval(() => void runHousekeeping(deps), HOUR_MS);
  timer.unref();
  return () => clearInterval(timer);
}
