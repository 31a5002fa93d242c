import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { selectEnvelopes, type EventEnvelope } from '../events/queries.js';
import type { Logger } from '../log.js';
import { refusalCause } from './address.js';
import {
  claimDueDeliveries,
  DELIVERIES_CHANNEL,
  dropDelivery,
  recordDelivered,
  recordFailedAttempt,
  type ClaimedDelivery,
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
  /** Deliveries in flight at once in this process. @default 16 */
  concurrency?: number;
  /**
   * How often due deliveries are looked for without a notice: retries coming due, and
   * deliveries whose notice a reconnect lost. New deliveries wake the worker through
   * DELIVERIES_CHANNEL at once. @default 1000
   */
  pollMs?: number;
  resolve?: SendOptions['resolve'];
}

export interface WebhookWorker {
  /** Looks for due deliveries now rather than at the next poll. */
  wake(): void;
  /** Whether new deliveries wake the worker (false: the LISTEN failed, polling only). */
  listening: Promise<boolean>;
  /** Stops claiming and waits for deliveries in flight (each ends within the timeout). */
  stop(): Promise<void>;
}

/** A claimed delivery and the event it carries. */
type Claimed = ClaimedDelivery & { event: EventEnvelope };

/**
 * Delivers webhook_deliveries (SPEC 3, 6). Each claim is one statement, so one short
 * transaction: due rows are locked FOR UPDATE SKIP LOCKED and their next_attempt_at pushed
 * past the attempt's timeout, so no other process claims the same attempt, and a process
 * killed mid-attempt leaves the row to be retried after the lease (claimDueDeliveries).
 * The claimed deliveries' events are then read in one statement of the events domain's
 * (events never change once recorded). Each claimed delivery
 * runs on its own; at most `concurrency` are in flight, and at most PER_WEBHOOK of them to
 * one webhook, so a hanging receiver always leaves slots to the others.
 */
/** At most this many sends to one webhook at once, so a hanging receiver leaves room. */
const PER_WEBHOOK = 8;

export function startWebhookWorker(options: WorkerOptions): WebhookWorker {
  const { database, config, log } = options;
  const sql = database.sql;
  const concurrency = options.concurrency ?? 16;
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let claiming = false;
  let again = false;

  /** Sends in flight per webhook: one receiver never holds more than PER_WEBHOOK slots. */
  const busy = new Map<string, number>();

  /** Claims due deliveries and reads their events (the events domain's rows). */
  async function claim(limit: number): Promise<Claimed[]> {
    const claimed = await claimDueDeliveries(database.db, {
      limit,
      inFlight: busy,
      perWebhook: PER_WEBHOOK,
      leaseMs: CLAIM_LEASE_MS,
    });
    const envelopes = await selectEnvelopes(
      database.db,
      claimed.map((row) => ({ workspaceId: row.workspaceId, id: row.eventId })),
    );
    const byKey = new Map(envelopes.map((e) => [`${e.workspaceId}/${e.id}`, e]));
    // A delivery whose event is gone is left to its lease, as the join it replaces did.
    return claimed.flatMap((row) => {
      const event = byKey.get(`${row.workspaceId}/${row.eventId}`);
      return event ? [{ ...row, event }] : [];
    });
  }

  async function deliver(row: Claimed): Promise<void> {
    if (row.deletedAt) {
      await dropDelivery(database.db, row);
      return;
    }
    const body = Buffer.from(
      JSON.stringify({
        id: row.eventId,
        name: row.event.name,
        at: row.event.at.toISOString(),
        data: row.event.data,
      }),
    );
    const outcome = await sendOnce({
      url: row.url,
      body,
      allow: config.webhooks,
      resolve: options.resolve,
      headers: {
        [SIGNATURE_HEADER]: signBody(row.secret, body),
        // Standard Webhooks: webhook-id is the delivery's id, the same on every retry.
        ...standardHeaders(row.secret, row.id, Math.floor(Date.now() / 1000), body),
        'X-Webhook-Id': row.eventId,
        'X-Webhook-Event': row.event.name,
        'user-agent': 'svc-webhooks',
      },
    });
    if (outcome.kind === 'answered' && outcome.status >= 200 && outcome.status < 300) {
      await recordDelivered(database.db, row, outcome.status);
      return;
    }
    let error: string;
    if (outcome.kind === 'refused') {
      const cause = refusalCause(outcome);
      log.warn(
        { webhookId: row.webhookId, host: outcome.host, address: outcome.address },
        `webhook delivery refused: ${outcome.host} resolves to ${outcome.address}, ${cause}`,
      );
      error = `address refused: ${outcome.host} (${outcome.address}), ${cause}`;
    } else if (outcome.kind === 'answered') {
      error = `answered ${outcome.status}`;
    } else error = outcome.message;
    const attempts = row.attempts + 1;
    const next = Date.now() + retryDelayMs(attempts);
    await recordFailedAttempt(database.db, row, {
      attempts,
      lastStatus: outcome.kind === 'answered' ? outcome.status : null,
      lastError: error,
      giveUp: next > row.firstAttemptAt.getTime() + RETRY_WINDOW_MS,
      nextAttemptAt: new Date(next),
    });
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    if (claiming) {
      again = true;
      return;
    }
    claiming = true;
    try {
      do {
        again = false;
        const room = concurrency - inFlight.size;
        if (room <= 0 || stopped) break;
        const rows = await claim(room);
        for (const row of rows) {
          busy.set(row.webhookId, (busy.get(row.webhookId) ?? 0) + 1);
          const job: Promise<void> = deliver(row)
            .catch((error: unknown) =>
              log.error({ err: error, deliveryId: row.id }, 'webhook delivery failed to record'),
            )
            .finally(() => {
              inFlight.delete(job);
              const left = (busy.get(row.webhookId) ?? 1) - 1;
              if (left > 0) busy.set(row.webhookId, left);
              else busy.delete(row.webhookId);
              void tick();
            });
          inFlight.add(job);
        }
        if (rows.length === room) again = true;
      } while (again);
    } catch (error) {
      if (!stopped) log.error({ err: error }, 'webhook worker could not claim deliveries');
    } finally {
      claiming = false;
    }
  }

  const timer = setInterval(() => void tick(), options.pollMs ?? 1000);
  timer.unref();
  // Every process hears the commit of each event that enqueued deliveries; the claims'
  // SKIP LOCKED shares them out. Until the LISTEN is up (or while it reconnects) the poll
  // alone finds them.
  const listener = sql
    .listen(
      DELIVERIES_CHANNEL,
      () => void tick(),
      () => void tick(),
    )
    .catch((error: unknown) => {
      log.warn({ err: error }, 'webhook worker could not listen; polling only');
      return null;
    });
  void tick();
  return {
    wake: () => void tick(),
    listening: listener.then((listen) => listen !== null),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await (await listener)?.unlisten().catch(() => {});
      await Promise.allSettled([...inFlight]);
    },
  };
}
