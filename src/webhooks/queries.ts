import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { webhookDeliveries, type WebhookDelivery } from './tables.js';

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
