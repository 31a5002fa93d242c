import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { webhookDeliveries, webhooks, type WebhookDelivery } from './tables.js';

/**
 * The latest `perWebhook` deliveries of each webhook (newest first, id breaking ties),
 * optionally of one `status`, in one read (`Webhook.deliveries` across a page of webhooks).
 */
export async function selectRecentDeliveries(
  db: Db,
  workspaceId: string,
  webhookIds: readonly string[],
  perWebhook: number,
  status: string | null,
): Promise<WebhookDelivery[]> {
  const newestFirst = sql`${webhookDeliveries.createdAt} desc, ${webhookDeliveries.id} desc`;
  const ranked = db
    .select({
      id: webhookDeliveries.id,
      rank: sql<number>`row_number() over (partition by ${webhookDeliveries.webhookId} order by ${newestFirst})`.as(
        'rank',
      ),
    })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.workspaceId, workspaceId),
        inArray(webhookDeliveries.webhookId, [...webhookIds]),
        status ? eq(webhookDeliveries.status, status as WebhookDelivery['status']) : undefined,
      ),
    )
    .as('ranked');
  const rows = await db
    .select({ delivery: webhookDeliveries })
    .from(webhookDeliveries)
    .innerJoin(ranked, eq(ranked.id, webhookDeliveries.id))
    .where(
      and(eq(webhookDeliveries.workspaceId, workspaceId), sql`${ranked.rank} <= ${perWebhook}`),
    )
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id));
  return rows.map((row) => row.delivery);
}

const d = webhookDeliveries;
const ago = (ms: number) => sql`now() - ${ms} * interval '1 millisecond'`;

/**
 * Whether a pending delivery still needs the event `event` names (its workspace and id
 * columns): the worker reads the event to build each attempt's envelope, so housekeeping
 * keeps such an event however old it is. A delivery never becomes pending again once
 * settled, so an event this answers false for stays unneeded.
 */
export function pendingDeliveryOf(event: { workspaceId: AnyPgColumn; id: AnyPgColumn }): SQL {
  return sql`exists (select 1 from ${d} where ${d.workspaceId} = ${event.workspaceId}
    and ${d.eventId} = ${event.id} and ${d.status} = 'pending')`;
}

/**
 * Housekeeping, one round: at most `limit` settled deliveries (delivered or failed) whose
 * last attempt is more than `olderThanMs` ago. `next_attempt_at` of a settled delivery is
 * its last claim's lease end (or, never attempted, when it was due), so the age counts
 * from its last attempt. Answers how many went.
 */
export async function deleteSettledDeliveries(
  db: Db,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  const gone = await db.execute(sql`
    delete from ${d}
    where ctid = any(array(
      select ctid from ${d}
      where ${d.status} in ('delivered', 'failed') and ${d.nextAttemptAt} < ${ago(olderThanMs)}
      limit ${limit}
      for update skip locked))
    returning 1`);
  return gone.length;
}

/**
 * Housekeeping, one round: at most `limit` webhooks deleted more than `olderThanMs` ago
 * of which no delivery is left (deleting a webhook only marks it, so its deliveries keep
 * naming it until they are swept). Answers how many went.
 */
export async function deleteRemovedWebhooks(
  db: Db,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  const w = webhooks;
  const gone = await db.execute(sql`
    delete from ${w}
    where ctid = any(array(
      select ctid from ${w}
      where ${w.deletedAt} < ${ago(olderThanMs)}
        and not exists (select 1 from ${d}
          where ${d.workspaceId} = ${w.workspaceId} and ${d.webhookId} = ${w.id})
      limit ${limit}
      for update skip locked))
    returning 1`);
  return gone.length;
}
