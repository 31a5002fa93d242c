import { and, eq, isNull, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { preparedSql } from '../db/prepared.js';
import { envelopeJson, type EnvelopeParts } from '../events/queries.js';
import {
  claimJobs,
  heldAt,
  stillHeld,
  notifyJobs,
  type ClaimedJob,
  type JobFailureRecord,
  type JobStorage,
} from '../jobs/runner.js';
import { webhookDeliveries, webhooks, type Webhook, type WebhookDelivery } from './tables.js';

/** The job kind of a delivery: its runners hear the enqueuing commit by this name. */
export const DELIVERY_JOB = 'webhooks.delivery';

/**
 * The outbox write as parts of the caller's statement (recordEvent writes the event, its
 * deliveries and their wake-up in one; its values may be placeholders of a statement built
 * once): `with` is a data-modifying WITH entry, `enqueued`,
 * inserting one delivery of the event to every live subscription of its workspace that
 * lists its name; `wake` is the NOTIFY of the workers, only when it inserted any. In the
 * event's transaction, so the event and its deliveries commit together and NOTIFY reaches
 * the workers only at that commit. A data-modifying WITH runs exactly once, whatever the
 * rest of the statement reads.
 */
export function enqueueParts(event: {
  workspaceId: string | Placeholder;
  id: string | Placeholder;
  name: string | Placeholder;
}): {
  with: SQL;
  wake: SQL;
} {
  // Drizzle's insert-from-select must name every column; this one leaves the rest to
  // their defaults.
  const live = and(
    eq(webhooks.workspaceId, event.workspaceId),
    isNull(webhooks.deletedAt),
    sql`${event.name} = any(${webhooks.events})`,
  );
  return {
    with: sql`enqueued as (
      insert into ${webhookDeliveries} (workspace_id, webhook_id, event_id)
      select ${webhooks.workspaceId}, ${webhooks.id}, ${event.id}::uuid from ${webhooks}
      where ${live}
      on conflict do nothing
      returning 1
    )`,
    wake: sql`case when exists (select 1 from enqueued) then ${notifyJobs(DELIVERY_JOB)} end`,
  };
}

/** The outbox write in a statement of its own (`enqueueParts`), in the caller's transaction. */
export async function enqueueDeliveries(
  db: Db,
  event: { workspaceId: string; id: string; name: string },
): Promise<void> {
  const parts = enqueueParts(event);
  await db.execute(sql`with ${parts.with} select ${parts.wake}`);
}

const d = webhookDeliveries;
const w = webhooks;
const ofWebhook = (column: typeof w.url | typeof w.secret | typeof w.deletedAt) =>
  sql`(select ${column} from ${w} where ${w.workspaceId} = ${d.workspaceId}
    and ${w.id} = ${d.webhookId})`;

/** What a claimed delivery carries besides its key and attempt. */
export interface DeliveryFields extends Record<string, unknown> {
  webhookId: string;
  eventId: string;
  /** Epoch milliseconds of the first attempt (the claim sets it). */
  firstAttemptMs: number;
  url: string;
  secret: string;
  /** Epoch milliseconds the webhook was deleted, or null. */
  deletedMs: number | null;
  /** The event, read with the claim (null: gone). */
  event: EnvelopeParts | null;
}

/**
 * The deliveries as the job runner's storage: due when pending and next_attempt_at has
 * passed, at most the kind's group cap per webhook, retries within 24 hours of the first
 * attempt. A failed attempt records its status and error; the last one marks it `failed`.
 */
export const deliveryStorage: JobStorage<DeliveryFields> = {
  table: d,
  workspaceId: d.workspaceId,
  id: d.id,
  dueAt: d.nextAttemptAt,
  attempts: d.attempts,
  windowFrom: d.firstAttemptAt,
  // Written as the claim index's predicate (webhook_deliveries_pending_claim_idx), which
  // no other index's follows from: the claim's scans can use that index only.
  pending: sql`(${d.status} = 'pending') is true`,
  countAt: 'outcome',
  group: d.webhookId,
  onClaim: { first_attempt_at: sql`coalesce(${d.firstAttemptAt}, now())` },
  fields: {
    webhookId: d.webhookId,
    eventId: d.eventId,
    firstAttemptMs: sql`(extract(epoch from coalesce(${d.firstAttemptAt}, now())) * 1000)::float8`,
    url: ofWebhook(w.url),
    secret: ofWebhook(w.secret),
    deletedMs: sql`(extract(epoch from ${ofWebhook(w.deletedAt)}) * 1000)::float8`,
    // Through the events domain's own statement fragment: events never change once recorded.
    event: envelopeJson(d.workspaceId, d.eventId),
  },
  async recordFailure(tx, job, failure: JobFailureRecord) {
    await tx
      .update(d)
      .set({
        lastStatus: typeof failure.detail === 'number' ? failure.detail : null,
        lastError: failure.error,
        ...(failure.final ? { status: 'failed' as const } : {}),
      })
      .where(one(job));
  },
};

/** A claimed delivery with what sending it needs of its webhook. */
export type ClaimedDelivery = Pick<
  WebhookDelivery,
  'workspaceId' | 'id' | 'webhookId' | 'eventId'
> & {
  /** This attempt's number: with `lease`, its outcome is written only while the row holds it. */
  attempt: number;
  lease: string;
  /** Where the claim left the row (`ClaimedJob.row`). */
  row: string;
  /** Set by the claim when it is the first attempt. */
  firstAttemptAt: Date;
  /** The event, read with the claim (null: gone). */
  event: EnvelopeParts | null;
} & Pick<Webhook, 'url' | 'secret' | 'deletedAt'>;

/** The runner's claimed job as a delivery. */
export function asDelivery(job: ClaimedJob<DeliveryFields>): ClaimedDelivery {
  return {
    workspaceId: job.workspaceId,
    id: job.id,
    webhookId: job.webhookId,
    eventId: job.eventId,
    attempt: job.attempt,
    lease: job.lease,
    row: job.row,
    firstAttemptAt: new Date(job.firstAttemptMs),
    url: job.url,
    secret: job.secret,
    deletedAt: job.deletedMs === null ? null : new Date(job.deletedMs),
    event: job.event,
  };
}

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

/**
 * Claims due deliveries through the job runner's claim (one statement, FOR UPDATE SKIP
 * LOCKED, leased and counted), within each webhook's room; no workspace share here (the
 * runner applies its own).
 */
export async function claimDueDeliveries(
  db: Db,
  options: ClaimOptions,
): Promise<ClaimedDelivery[]> {
  const jobs = await claimJobs(db, deliveryStorage, {
    limit: options.limit,
    leaseMs: options.leaseMs,
    perWorkspace: options.limit,
    running: new Map(),
    groupCap: options.perWebhook,
    runningGroups: options.inFlight,
  });
  return jobs.map(asDelivery);
}

type DeliveryKey = Pick<WebhookDelivery, 'workspaceId' | 'id'>;

function one(key: DeliveryKey) {
  return and(eq(d.workspaceId, key.workspaceId), eq(d.id, key.id));
}

type Held = DeliveryKey & { attempt: number; lease: string };

/** While the row still holds the attempt it was claimed with. */
function held(key: Held) {
  return stillHeld(deliveryStorage, key);
}

/** A claimed delivery whose webhook was deleted meanwhile: never sent. */
export async function dropDelivery(db: Db, key: Held): Promise<void> {
  await db.update(d).set({ status: 'failed', lastError: 'webhook deleted' }).where(held(key));
}

/** A delivery answered 2xx: its claim and the answer's status. */
export type Delivered = Held & { row: string; status: number };

/** The statement of `recordDelivered`, built once and prepared. */
const settleDelivered = preparedSql<Record<string, unknown[]>, { id: string }>(
  () => sql`
    update ${d} set status = 'delivered', attempts = ${d.attempts} + 1,
      last_status = k.status, last_error = null, delivered_at = now()
    from unnest(${sql.placeholder('rows')}::tid[], ${sql.placeholder('ids')}::uuid[],
      ${sql.placeholder('attempts')}::int[], ${sql.placeholder('leases')}::text[],
      ${sql.placeholder('statuses')}::int[]) as k(t, i, attempt, lease, status)
    where ${heldAt(deliveryStorage, 'k')}
    returning ${d.id} as id`,
);

/**
 * 2xx answers: each delivered, with its attempt counted, in one statement for the lot,
 * each only while its row still holds the attempt it was claimed with. Rows are found
 * where their claim left them (`heldAt`); one moved since (a table rewrite) is settled
 * by its key in a second statement.
 */
export async function recordDelivered(db: Db, rows: readonly Delivered[]): Promise<void> {
  if (rows.length === 0) return;
  const column = <K extends keyof Delivered>(key: K) => rows.map((row) => row[key]);
  const settled = await settleDelivered(db, {
    rows: column('row'),
    ids: column('id'),
    attempts: column('attempt'),
    leases: column('lease'),
    statuses: column('status'),
  });
  if (settled.length === rows.length) return;
  const found = new Set(settled.map((row) => row.id));
  for (const row of rows) {
    if (found.has(row.id)) continue;
    await db
      .update(d)
      .set({
        status: 'delivered',
        attempts: sql`${d.attempts} + 1`,
        lastStatus: row.status,
        lastError: null,
        deliveredAt: sql`now()`,
      })
      .where(held(row));
  }
}

/**
 * The outbox's depth for the metrics (docs/operations.md): deliveries still pending in
 * every workspace and the age of the oldest, in one statement.
 */
export async function outboxFigures(db: Db): Promise<{ pending: number; oldestSeconds: number }> {
  const [row] = (await db.execute(sql`
    select count(*)::int as pending,
      coalesce(extract(epoch from now() - min(${d.createdAt})), 0)::float8 as "oldestSeconds"
    from ${d} where ${d.status} = 'pending'`)) as unknown as {
    pending: number;
    oldestSeconds: number;
  }[];
  return row ?? { pending: 0, oldestSeconds: 0 };
}
