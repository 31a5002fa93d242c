import type { ServerResponse } from 'node:http';
import type { Sql } from 'postgres';
import { pendingMigrationSets, type MigrationSet } from '../db/migrate.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../errors.js';
import type { Logger } from '../log.js';
import { sendJson } from './node-fetch-bridge.js';

/**
 * How long `/api/readyz` waits for the database before answering 503. A load balancer's
 * poll must get an answer while PostgreSQL is down or restarting, when a connection
 * attempt may wait out a reconnect delay (src/db/client.ts).
 */
export const READY_TIMEOUT_MS = 500;

type Outcome = { pending: string[] } | { readOnly: true } | { unreachable: unknown };

/**
 * Whether the server the pool reached takes writes: not a standby in recovery (one not
 * yet promoted, during a failover) and not read-only by default.
 */
async function writable(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ writable: boolean }[]>`
    select not pg_is_in_recovery()
      and current_setting('default_transaction_read_only') = 'off' as writable`;
  return row?.writable === true;
}

async function probe(sql: Sql, sets: readonly MigrationSet[]): Promise<Outcome> {
  if (!(await writable(sql))) return { readOnly: true };
  return { pending: await pendingMigrationSets(sql, [...sets]) };
}

export interface ReadinessOptions {
  sql: Sql;
  migrationSets: readonly MigrationSet[];
  isShuttingDown: () => boolean;
  log: Logger;
  timeoutMs?: number;
}

/**
 * `/api/readyz`: 200 when the database answers, takes writes and every migration set is
 * applied; 503 while shutting down, with migrations pending, or when the database does not
 * answer within `timeoutMs` or answers read-only (both with Retry-After). Polls that arrive while a check is under way share
 * it, so a load balancer polling a dead database does not pile up connection attempts.
 */
export function createReadiness(options: ReadinessOptions) {
  const timeoutMs = options.timeoutMs ?? READY_TIMEOUT_MS;
  let inFlight: Promise<Outcome> | null = null;

  function check(): Promise<Outcome> {
    inFlight ??= probe(options.sql, options.migrationSets)
      .catch((error: unknown): Outcome => ({ unreachable: error }))
      .finally(() => (inFlight = null));
    return inFlight;
  }

  return async function ready(res: ServerResponse): Promise<void> {
    if (options.isShuttingDown()) return sendJson(res, 503, { status: 'shutting down' });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(resolve, timeoutMs, null)));
    const outcome = await Promise.race([check(), late]).finally(() => clearTimeout(timer));
    if (outcome && 'pending' in outcome) {
      if (outcome.pending.length > 0) {
        return sendJson(res, 503, { status: 'migrations pending', sets: outcome.pending });
      }
      return sendJson(res, 200, { status: 'ready' });
    }
    const retryAfter = { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) };
    if (outcome && 'readOnly' in outcome) {
      options.log.warn('readiness check: the database does not take writes');
      return sendJson(res, 503, { status: 'database read-only' }, retryAfter);
    }
    if (outcome) {
      options.log.warn(
        { err: outcome.unreachable },
        'readiness check could not reach the database',
      );
    } else {
      options.log.warn({ timeoutMs }, 'readiness check: the database did not answer in time');
    }
    sendJson(res, 503, { status: 'database unreachable' }, retryAfter);
  };
}
