import { webhookDeliveries } from '../metrics/registry.js';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import {
  JobRetry,
  startJobRunner,
  type JobContext,
  type JobKind,
  type JobRunner,
} from '../jobs/runner.js';
import type { Logger } from '../log.js';
import { refusalCause } from './address.js';
import {
  asDelivery,
  DELIVERY_JOB,
  deliveryStorage,
  dropDelivery,
  recordDelivered,
  type ClaimedDelivery,
  type DeliveryFields,
} from './outbox.js';
import { DELIVERY_TIMEOUT_MS, sendOnce, type SendOptions } from './send.js';
import { SIGNATURE_HEADER, signBody, standardHeaders } from './signing.js';

/** Retries stop this long after the first attempt; the delivery is then `failed`. */
export const RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A claim pushes next_attempt_at this far ahead: longer than any one attempt can take. */
const CLAIM_LEASE_MS = DELIVERY_TIMEOUT_MS + 20_000;

/** The wait after the n-th failed attempt (1-based): min(1 h, 5 s * 2^(n-1)), +-20 %. */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(60 * 60 * 1000, 5000 * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

export interface WorkerOptions {
  database: Database;
  config: Config;
  log: Logger;
  /** Deliveries in flight at once in this process. @default SVC_JOBS_CONCURRENCY (16) */
  concurrency?: number;
  /**
   * How often due deliveries are looked for without a notice: retries coming due, and
   * deliveries whose notice a reconnect lost. New deliveries wake the worker through
   * the jobs channel at once. @default 1000
   */
  pollMs?: number;
  resolve?: SendOptions['resolve'];
}

export type WebhookWorker = JobRunner;

/** At most this many sends to one webhook at once, so a hanging receiver leaves room. */
const PER_WEBHOOK = 8;

/**
 * The delivery job (SPEC 3, 6): webhook_deliveries rows run by the one job runner
 * (src/jobs/runner.ts), which claims them with a lease (a process killed mid-attempt
 * leaves the row to be retried after it), at most PER_WEBHOOK to one webhook and a fair
 * share to one workspace, woken by the enqueuing commit's NOTIFY. The claim reads each
 * delivery's event with it (events never change once recorded); a 2xx answer frees the
 * send's slot at once and the runner writes those outcomes in batches (`settle`).
 */
export function deliveryJob(resolve?: SendOptions['resolve']): JobKind<DeliveryFields, number> {
  return {
    name: DELIVERY_JOB,
    storage: deliveryStorage,
    leaseMs: CLAIM_LEASE_MS,
    groupCap: PER_WEBHOOK,
    retry: { delayMs: retryDelayMs, windowMs: RETRY_WINDOW_MS },
    run: (job, context) => deliver(context, asDelivery(job), resolve),
    settle: (db, done) =>
      recordDelivered(
        db,
        done.map(({ job, outcome }) => ({ ...job, status: outcome })),
      ),
  };
}

/** Sends one delivery; a 2xx answer is the status for the runner to settle. */
async function deliver(
  { database, config, log }: JobContext,
  row: ClaimedDelivery,
  resolve: SendOptions['resolve'],
): Promise<void | { settle: number }> {
  if (row.deletedAt) {
    await dropDelivery(database.db, row);
    return;
  }
  const { event } = row;
  // A delivery whose event is gone is left to its lease, as the join it replaces did.
  if (!event) return;
  const body = Buffer.from(
    JSON.stringify({
      id: row.eventId,
      name: event.name,
      at: new Date(event.atMs).toISOString(),
      data: event.data,
    }),
  );
  const outcome = await sendOnce({
    url: row.url,
    body,
    allow: config.webhooks,
    resolve,
    keepAlive: true,
    headers: {
      [SIGNATURE_HEADER]: signBody(row.secret, body),
      // Standard Webhooks: webhook-id is the delivery's id, the same on every retry.
      ...standardHeaders(row.secret, row.id, Math.floor(Date.now() / 1000), body),
      'X-Webhook-Id': row.eventId,
      'X-Webhook-Event': event.name,
      'user-agent': 'svc-webhooks',
    },
  });
  webhookDeliveries.inc({ outcome: deliveryOutcome(outcome) });
  if (outcome.kind === 'answered' && outcome.status >= 200 && outcome.status < 300) {
    return { settle: outcome.status };
  }
  if (outcome.kind === 'refused') {
    const cause = refusalCause(outcome);
    log.warn(
      { webhookId: row.webhookId, host: outcome.host, address: outcome.address },
      `webhook delivery refused: ${outcome.host} resolves to ${outcome.address}, ${cause}`,
    );
    throw new JobRetry(`address refused: ${outcome.host} (${outcome.address}), ${cause}`);
  }
  if (outcome.kind === 'answered') {
    throw new JobRetry(`answered ${outcome.status}`, outcome.status);
  }
  throw new JobRetry(outcome.message);
}

/** An attempt's outcome as the metrics count it (a handful of fixed values). */
function deliveryOutcome(outcome: Awaited<ReturnType<typeof sendOnce>>): string {
  if (outcome.kind === 'answered') {
    return outcome.status >= 200 && outcome.status < 300 ? 'delivered' : 'answered_error';
  }
  return outcome.kind === 'refused' ? 'refused' : 'unreachable';
}

/** Delivers webhook_deliveries in this process until stopped (the server starts one). */
export function startWebhookWorker(options: WorkerOptions): WebhookWorker {
  return startJobRunner(deliveryJob(options.resolve), options);
}
