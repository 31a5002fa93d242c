import { and, asc, eq, isNull, lte, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { webhookDeliveries, webhooks, type Webhook, type WebhookDelivery } from './tables.js';

/**
 * Announced (empty payload) at commit when an event enqueued webhook deliveries, so every
 * process's webhook worker claims them at once instead of at its next poll.
 */
export const DELIVERIES_CHANNEL = 'svc_webhook_deliveries';

/**
 * The outbox write: one delivery of the event to every live subscription of its
 * workspace listing its name, and the wake-up of the workers when there is any, in one
 * statement of the caller's transaction (`db` is the event's transaction), so the event
 * and its deliveries commit together and NOTIFY reaches the workers only at that commit.
 */
export async function enqueueDeliveries(
  db: Db,
  event: { workspaceId: string; id: string; name: string },
): Promise<void> {
  // Drizzle's insert-from-select must name every column; this one leaves the rest to
  // their defaults. A data-modifying WITH runs exactly once, whatever the select reads.
  const live = and(
    eq(webhooks.workspaceId, event.workspaceId),
    isNull(webhooks.deletedAt),
    sql`${event.name} = any(${webhooks.events})`,
  );
  await db.execute(sql`
    with enqueued as (
      insert into ${webhookDeliveries} (workspace_id, webhook_id, event_id)
      select ${webhooks.workspaceId}, ${webhooks.id}, ${event.id}::uuid from ${webhooks}
      where ${live}
      on conflict do nothing
      returning 1
    )
    select case when exists (select 1 from enqueued) then pg_notify(${DELIVERIES_CHANNEL}, '') end`);
}

/** A claimed delivery with what sending it needs of its webhook. */
export type ClaimedDelivery = Pick<
  WebhookDelivery,
  'workspaceId' | 'id' | 'webhookId' | 'eventId' | 'attempts'
> & {
  /** Set by the claim when it is the first attempt. */
  firstAttemptAt: Date;
} & Pick<Webhook, 'url' | 'secret' | 'deletedAt'>;

export interface ClaimOptions {
  /** Deliveries to claim at most. */
  limit: number;
  /** Sends already in flight in this process, by webhook id. */
  inFlight: ReadonlyMap<string, number>;
  /** At most this many sends to one webhook at once, counting those in flight. */
  perWebhook: number;
  /** How far ahead the claim pushes next_attempt_at: longer than any one attempt. */
  leaseMs: number;
}

const isDue = () =>
  and(eq(webhookDeliveries.status, 'pending'), lte(webhookDeliveries.nextAttemptAt, sql`now()`));

/** Due rows, the earliest first, within each webhook's room left by the sends in flight. */
function candidates(db: Db, options: ClaimOptions) {
  const d = webhookDeliveries;
  const ids = [...options.inFlight.keys()];
  const used = ids.map((id) => options.inFlight.get(id) ?? 0);
  const ranked = db
    .select({
      workspaceId: d.workspaceId,
      id: d.id,
      nextAttemptAt: d.nextAttemptAt,
      used: sql<number>`coalesce(u.used, 0)`.as('used'),
      nth: sql<number>`row_number() over (partition by ${d.workspaceId}, ${d.webhookId}
        order by ${d.nextAttemptAt}, ${d.id})`.as('nth'),
    })
    .from(d)
    .leftJoin(
      sql`unnest(${sql.param(ids)}::uuid[], ${sql.param(used)}::int[]) as u(webhook_id, used)`,
      sql`u.webhook_id = ${d.webhookId}`,
    )
    .where(isDue())
    .as('ranked');
  return db.$with('candidates').as(
    db
      .select({ workspaceId: ranked.workspaceId, id: ranked.id })
      .from(ranked)
      .where(sql`${ranked.nth} <= ${options.perWebhook} - ${ranked.used}`)
      .orderBy(asc(ranked.nextAttemptAt))
      .limit(options.limit),
  );
}

/**
 * Claims due deliveries in one statement, so one short transaction: the candidates are
 * locked FOR UPDATE SKIP LOCKED (rows another process holds are passed over) and their
 * next_attempt_at pushed a lease ahead, so no other process claims the same attempt and
 * a process killed mid-attempt leaves the row to be retried after the lease.
 */
export async function claimDueDeliveries(
  db: Db,
  options: ClaimOptions,
): Promise<ClaimedDelivery[]> {
  const d = webhookDeliveries;
  const picked = candidates(db, options);
  const due = db.$with('due').as(
    db
      .select({ workspaceId: d.workspaceId, id: d.id })
      .from(d)
      .innerJoin(picked, and(eq(picked.workspaceId, d.workspaceId), eq(picked.id, d.id)))
      .where(isDue())
      .for('update', { of: d, skipLocked: true }),
  );
  const claimed = db.$with('claimed').as(
    db
      .update(d)
      .set({
        nextAttemptAt: sql`now() + ${`${options.leaseMs} milliseconds`}::interval`,
        firstAttemptAt: sql`coalesce(${d.firstAttemptAt}, now())`,
      })
      .from(due)
      .where(and(eq(d.workspaceId, due.workspaceId), eq(d.id, due.id)))
      .returning({
        workspaceId: d.workspaceId,
        id: d.id,
        webhookId: d.webhookId,
        eventId: d.eventId,
        attempts: d.attempts,
        firstAttemptAt: d.firstAttemptAt,
      }),
  );
  const rows = await db
    .with(picked, due, claimed)
    .select({
      workspaceId: claimed.workspaceId,
      id: claimed.id,
      webhookId: claimed.webhookId,
      eventId: claimed.eventId,
      attempts: claimed.attempts,
      firstAttemptAt: claimed.firstAttemptAt,
      url: webhooks.url,
      secret: webhooks.secret,
      deletedAt: webhooks.deletedAt,
    })
    .from(claimed)
    .innerJoin(
      webhooks,
      and(eq(webhooks.workspaceId, claimed.workspaceId), eq(webhooks.id, claimed.webhookId)),
    );
  // The claim always sets first_attempt_at.
  return rows.map((row) => ({ ...row, firstAttemptAt: row.firstAttemptAt ?? new Date() }));
}

type DeliveryKey = Pick<WebhookDelivery, 'workspaceId' | 'id'>;

function one(key: DeliveryKey) {
  return and(eq(webhookDeliveries.workspaceId, key.workspaceId), eq(webhookDeliveries.id, key.id));
}

/** A claimed delivery whose webhook was deleted meanwhile: never sent. */
export async function dropDelivery(db: Db, key: DeliveryKey): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ status: 'failed', lastError: 'webhook deleted' })
    .where(one(key));
}

/** A 2xx answer: delivered, with the attempt counted. */
export async function recordDelivered(db: Db, key: DeliveryKey, status: number): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({
      status: 'delivered',
      attempts: sql`${webhookDeliveries.attempts} + 1`,
      lastStatus: status,
      lastError: null,
      deliveredAt: sql`now()`,
    })
    .where(one(key));
}

/** A failed attempt: retried at `nextAttemptAt`, or `failed` when `giveUp`. */
export async function recordFailedAttempt(
  db: Db,
  key: DeliveryKey,
  attempt: {
    attempts: number;
    lastStatus: number | null;
    lastError: string;
    giveUp: boolean;
    nextAttemptAt: Date;
  },
): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({
      attempts: attempt.attempts,
      lastStatus: attempt.lastStatus,
      lastError: attempt.lastError,
      status: attempt.giveUp ? 'failed' : 'pending',
      nextAttemptAt: attempt.nextAttemptAt,
    })
    .where(one(key));
}
