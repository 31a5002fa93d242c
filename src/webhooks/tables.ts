import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, sameWorkspaceRef, workspaceKey, workspaceOwned } from '../db/columns.js';

/**
 * Outbound webhook subscriptions (SPEC 2.8, 6). `secret` is stored as given, not hashed or
 * sealed: every delivery signs its body with HMAC-SHA256 keyed by the raw secret, so the
 * sender must be able to read it back (the receiver holds the same value). It is shown
 * once, at creation, and never returned by the graph afterwards.
 */
export const webhooks = pgTable(
  'webhooks',
  {
    ...workspaceOwned(),
    url: text().notNull(),
    /** Event names the subscription receives (docs/events.md). */
    events: text().array().notNull(),
    secret: text().notNull(),
    /** The account that registered it (listing and deleting without manage_webhooks). */
    createdBy: uuid(),
    createdAt: createdAt(),
    /** Set by deleteWebhook; deliveries stop being enqueued and pending ones are dropped. */
    deletedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    workspaceKey(t),
    index('webhooks_workspace_live_idx')
      .on(t.workspaceId)
      .where(sql`${t.deletedAt} is null`),
  ],
);

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One event to one subscription: a durable job, inserted in the event's own transaction
 * (recordEvent) and claimed by the worker with FOR UPDATE SKIP LOCKED.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    ...workspaceOwned(),
    webhookId: uuid().notNull(),
    eventId: uuid().notNull(),
    attempts: integer().notNull().default(0),
    nextAttemptAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    status: text().$type<DeliveryStatus>().notNull().default('pending'),
    lastError: text(),
    lastStatus: integer(),
    createdAt: createdAt(),
    /** The first attempt; retries stop 24 hours after it. */
    firstAttemptAt: timestamp({ withTimezone: true }),
    deliveredAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    workspaceKey(t),
    uniqueIndex('webhook_deliveries_event_key').on(t.workspaceId, t.webhookId, t.eventId),
    // Housekeeping: settled deliveries by their last attempt. Settled rows only, so the
    // claim's pending rows have one index that leads with status no more.
    index('webhook_deliveries_settled_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} in ('delivered', 'failed')`),
    // The claim (src/jobs/runner.ts): each webhook's first due rows, found by skipping from
    // one (workspace, webhook) to the next, so a claim reads a few rows per webhook rather
    // than every pending row (a backlog of 10,000 cost 65 ms a claim). Its predicate is
    // written as the claim writes pending (deliveryStorage), and implies no other index's:
    // the claim's conditions match this index alone, so stale statistics (which may call
    // the pending rows few) cannot steer it to the event index and a scan of them all.
    index('webhook_deliveries_pending_claim_idx')
      .on(t.workspaceId, t.webhookId, t.nextAttemptAt, t.id)
      .where(sql`(${t.status} = 'pending') is true`),
    // Whether a pending delivery still needs an event (the events sweep): pending rows only.
    index('webhook_deliveries_pending_event_idx')
      .on(t.workspaceId, t.eventId)
      .where(sql`${t.status} = 'pending'`),
    sameWorkspaceRef(t, t.webhookId, webhooks),
  ],
);

export type Webhook = typeof webhooks.$inferSelect;
export type WebhookDelivery = typeof webhookDeliveries.$inferSelect;
