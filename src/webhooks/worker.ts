import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { DELIVERIES_CHANNEL } from '../events/service.js';
import type { Logger } from '../log.js';
import { refusalCause } from './address.js';
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

interface Claimed {
  workspace_id: string;
  id: string;
  webhook_id: string;
  event_id: string;
  attempts: number;
  /** postgres.js may hand timestamps over as text; read through `new Date`. */
  first_attempt_at: Date | string;
  url: string;
  secret: string;
  deleted_at: Date | null;
  name: string;
  at: Date | string;
  data: Record<string, unknown>;
}

/**
 * Delivers webhook_deliveries (SPEC 3, 6). Each claim is one statement, so one short
 * transaction: due rows are locked FOR UPDATE SKIP LOCKED and their next_attempt_at pushed
 * past the attempt's timeout, so no other process claims the same attempt, and a process
 * killed mid-attempt leaves the row to be retried after the lease. Each claimed delivery
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

  async function claim(limit: number): Promise<Claimed[]> {
    const ids = [...busy.keys()];
    const used = ids.map((id) => busy.get(id) ?? 0);
    return sql<Claimed[]>`
      with candidates as (
        select workspace_id, id, next_attempt_at from (
          select d.workspace_id, d.id, d.next_attempt_at, coalesce(u.used, 0) as used,
                 row_number() over (partition by d.workspace_id, d.webhook_id
                                    order by d.next_attempt_at, d.id) as nth
          from webhook_deliveries d
          left join unnest(${ids}::uuid[], ${used}::int[]) as u(webhook_id, used)
            on u.webhook_id = d.webhook_id
          where d.status = 'pending' and d.next_attempt_at <= now()
        ) ranked
        where nth <= ${PER_WEBHOOK} - used
        order by next_attempt_at
        limit ${limit}
      ), due as (
        select d.workspace_id, d.id from webhook_deliveries d
        join candidates c on c.workspace_id = d.workspace_id and c.id = d.id
        where d.status = 'pending' and d.next_attempt_at <= now()
        for update of d skip locked
      ), claimed as (
        update webhook_deliveries d
        set next_attempt_at = now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval,
            first_attempt_at = coalesce(d.first_attempt_at, now())
        from due
        where d.workspace_id = due.workspace_id and d.id = due.id
        returning d.workspace_id, d.id, d.webhook_id, d.event_id, d.attempts, d.first_attempt_at
      )
      select c.*, w.url, w.secret, w.deleted_at, e.name, e.at, e.data
      from claimed c
      join webhooks w on w.workspace_id = c.workspace_id and w.id = c.webhook_id
      join events e on e.workspace_id = c.workspace_id and e.id = c.event_id`;
  }

  async function deliver(row: Claimed): Promise<void> {
    if (row.deleted_at) {
      await sql`update webhook_deliveries set status = 'failed', last_error = 'webhook deleted'
        where workspace_id = ${row.workspace_id} and id = ${row.id}`;
      return;
    }
    const body = Buffer.from(
      JSON.stringify({
        id: row.event_id,
        name: row.name,
        at: new Date(row.at).toISOString(),
        data: row.data,
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
        'X-Webhook-Id': row.event_id,
        'X-Webhook-Event': row.name,
        'user-agent': 'svc-webhooks',
      },
    });
    if (outcome.kind === 'answered' && outcome.status >= 200 && outcome.status < 300) {
      await sql`update webhook_deliveries
        set status = 'delivered', attempts = attempts + 1, last_status = ${outcome.status},
            last_error = null, delivered_at = now()
        where workspace_id = ${row.workspace_id} and id = ${row.id}`;
      return;
    }
    let error: string;
    if (outcome.kind === 'refused') {
      const cause = refusalCause(outcome);
      log.warn(
        { webhookId: row.webhook_id, host: outcome.host, address: outcome.address },
        `webhook delivery refused: ${outcome.host} resolves to ${outcome.address}, ${cause}`,
      );
      error = `address refused: ${outcome.host} (${outcome.address}), ${cause}`;
    } else if (outcome.kind === 'answered') {
      error = `answered ${outcome.status}`;
    } else error = outcome.message;
    const attempts = row.attempts + 1;
    const next = Date.now() + retryDelayMs(attempts);
    const giveUp = next > new Date(row.first_attempt_at).getTime() + RETRY_WINDOW_MS;
    await sql`update webhook_deliveries
      set attempts = ${attempts},
          last_status = ${outcome.kind === 'answered' ? outcome.status : null},
          last_error = ${error},
          status = ${giveUp ? 'failed' : 'pending'},
          next_attempt_at = ${new Date(next).toISOString()}::timestamptz
      where workspace_id = ${row.workspace_id} and id = ${row.id}`;
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
          busy.set(row.webhook_id, (busy.get(row.webhook_id) ?? 0) + 1);
          const job: Promise<void> = deliver(row)
            .catch((error: unknown) =>
              log.error({ err: error, deliveryId: row.id }, 'webhook delivery failed to record'),
            )
            .finally(() => {
              inFlight.delete(job);
              const left = (busy.get(row.webhook_id) ?? 1) - 1;
              if (left > 0) busy.set(row.webhook_id, left);
              else busy.delete(row.webhook_id);
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
