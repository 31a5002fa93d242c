// The webhooks domain's outbox (src/webhooks/outbox.ts): what recordEvent enqueues in the
// event's transaction, and what one claim takes.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { and, eq, sql } from 'drizzle-orm';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import { recordEvent } from '../../src/events/service.js';
import { events } from '../../src/events/tables.js';
import {
  claimDueDeliveries,
  enqueueDeliveries,
  recordDelivered,
} from '../../src/webhooks/outbox.js';
import { webhookDeliveries, webhooks, type Webhook } from '../../src/webhooks/tables.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';

// No service: no worker claims the rows written here.
let testDb: TestDatabase;
let db: Db;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = testDb.database.db;
});

afterAll(() => testDb.drop());

async function insertWebhook(
  workspaceId: string,
  events: string[],
  deleted = false,
): Promise<Webhook> {
  const [row] = await db
    .insert(webhooks)
    .values({
      workspaceId,
      url: 'https://hooks.example.com/in',
      events,
      secret: 'whsec_test',
      deletedAt: deleted ? new Date() : null,
    })
    .returning();
  return row!;
}

function deliveriesOf(eventId: string) {
  return db
    .select({ webhookId: webhookDeliveries.webhookId })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.eventId, eventId));
}

describe('enqueueDeliveries', () => {
  test('enqueues for the live subscriptions of the workspace listing the name only', async () => {
    const workspace = await createWorkspace(db);
    const other = await createWorkspace(db);
    const listing = await insertWebhook(workspace.id, ['task.created', 'task.updated']);
    await insertWebhook(workspace.id, ['task.updated']);
    await insertWebhook(workspace.id, ['task.created'], true);
    await insertWebhook(other.id, ['task.created']);
    const eventId = randomUUID();
    await db.transaction((tx) =>
      enqueueDeliveries(tx as never, {
        workspaceId: workspace.id,
        id: eventId,
        name: 'task.created',
      }),
    );
    expect(await deliveriesOf(eventId)).toEqual([{ webhookId: listing.id }]);
  });

  test('enqueues nothing when the transaction rolls back', async () => {
    const workspace = await createWorkspace(db);
    await insertWebhook(workspace.id, ['task.created']);
    const eventId = randomUUID();
    await expect(
      db.transaction(async (tx) => {
        await enqueueDeliveries(tx as never, {
          workspaceId: workspace.id,
          id: eventId,
          name: 'task.created',
        });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await deliveriesOf(eventId)).toEqual([]);
  });
});

describe('claimDueDeliveries', () => {
  test('takes each webhook’s room at most, pushes the lease ahead, and skips what it took', async () => {
    const workspace = await createWorkspace(db);
    const busy = await insertWebhook(workspace.id, ['contact.created']);
    const idle = await insertWebhook(workspace.id, ['contact.created']);
    for (let i = 0; i < 3; i += 1) {
      await enqueueDeliveries(db, {
        workspaceId: workspace.id,
        id: randomUUID(),
        name: 'contact.created',
      });
    }
    const options = { limit: 10, perWebhook: 2, leaseMs: 60_000 };
    const claimed = await claimDueDeliveries(db, { ...options, inFlight: new Map([[busy.id, 1]]) });
    const count = (webhookId: string) => claimed.filter((d) => d.webhookId === webhookId).length;
    expect(count(busy.id)).toBe(1);
    expect(count(idle.id)).toBe(2);
    for (const delivery of claimed) {
      expect(delivery).toMatchObject({ url: busy.url, secret: 'whsec_test', deletedAt: null });
      expect(delivery.firstAttemptAt).toBeInstanceOf(Date);
      const [row] = await db
        .select({ nextAttemptAt: webhookDeliveries.nextAttemptAt })
        .from(webhookDeliveries)
        .where(
          and(
            eq(webhookDeliveries.workspaceId, delivery.workspaceId),
            eq(webhookDeliveries.id, delivery.id),
          ),
        );
      expect(row!.nextAttemptAt.getTime()).toBeGreaterThan(Date.now() + 50_000);
    }
    // What the first claim leased is not due: the rest of each webhook's rows are.
    const again = await claimDueDeliveries(db, { ...options, inFlight: new Map() });
    const left = again.filter((d) => d.workspaceId === workspace.id);
    expect(left.filter((d) => d.webhookId === busy.id)).toHaveLength(2);
    expect(left.filter((d) => d.webhookId === idle.id)).toHaveLength(1);
    expect(left.some((d) => claimed.some((c) => c.id === d.id))).toBe(false);
  });

  test('a backlog in one workspace never hides another workspace’s first row; each comes with its event', async () => {
    // Lease whatever earlier tests left due, so only this test's rows compete.
    await claimDueDeliveries(db, {
      limit: 1000,
      perWebhook: 1000,
      leaseMs: 60_000,
      inFlight: new Map(),
    });
    const crowded = await createWorkspace(db);
    const quiet = await createWorkspace(db);
    await insertWebhook(crowded.id, ['task.created']);
    await insertWebhook(crowded.id, ['task.created']);
    await insertWebhook(quiet.id, ['task.created']);
    for (let i = 0; i < 30; i += 1) {
      await enqueueDeliveries(db, {
        workspaceId: crowded.id,
        id: randomUUID(),
        name: 'task.created',
      });
    }
    // Enqueued last, so due last of all: round-robin still takes it in the first two.
    const eventId = await db.transaction((tx) =>
      recordEvent(tx as never, {
        workspaceId: quiet.id,
        name: 'task.created',
        subjectId: randomUUID(),
        data: { title: 'Call back' },
      }),
    );
    const claimed = await claimDueDeliveries(db, {
      limit: 2,
      perWebhook: 8,
      leaseMs: 60_000,
      inFlight: new Map(),
    });
    expect(claimed.map((d) => d.workspaceId).sort()).toEqual([crowded.id, quiet.id].sort());
    const mine = claimed.find((d) => d.workspaceId === quiet.id)!;
    const [event] = await db
      .select({ at: events.at, data: events.data })
      .from(events)
      .where(and(eq(events.workspaceId, quiet.id), eq(events.id, eventId)));
    expect(mine.eventId).toBe(eventId);
    expect(mine.event).toEqual({
      name: 'task.created',
      atMs: event!.at.getTime(),
      data: event!.data,
    });
    // The crowded workspace's rows name no recorded event: the claim says so.
    expect(claimed.find((d) => d.workspaceId === crowded.id)!.event).toBeNull();
  });
});

describe('recordDelivered', () => {
  async function claimOwn(workspaceId: string) {
    const claimed = await claimDueDeliveries(db, {
      limit: 1000,
      perWebhook: 1000,
      leaseMs: 60_000,
      inFlight: new Map(),
    });
    return claimed.filter((d) => d.workspaceId === workspaceId);
  }
  function rowOf(id: string) {
    return db
      .select({
        status: webhookDeliveries.status,
        attempts: webhookDeliveries.attempts,
        lastStatus: webhookDeliveries.lastStatus,
      })
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.id, id));
  }

  test('settles each claimed row once, where its claim left it or, moved since, by its key', async () => {
    const workspace = await createWorkspace(db);
    await insertWebhook(workspace.id, ['task.created']);
    for (let i = 0; i < 3; i += 1) {
      await enqueueDeliveries(db, {
        workspaceId: workspace.id,
        id: randomUUID(),
        name: 'task.created',
      });
    }
    const [kept, moved, lost] = await claimOwn(workspace.id);
    // A write that keeps the claim but moves the row (as a table rewrite would).
    await db
      .update(webhookDeliveries)
      .set({ lastError: null })
      .where(eq(webhookDeliveries.id, moved!.id));
    // The lease ran out and another runner claimed it again: this attempt's outcome is stale.
    await db
      .update(webhookDeliveries)
      .set({ nextAttemptAt: sql`now() + interval '2 minutes'` })
      .where(eq(webhookDeliveries.id, lost!.id));
    await recordDelivered(
      db,
      [kept!, moved!, lost!].map((d) => ({ ...d, status: 204 })),
    );
    expect(await rowOf(kept!.id)).toEqual([{ status: 'delivered', attempts: 1, lastStatus: 204 }]);
    expect(await rowOf(moved!.id)).toEqual([{ status: 'delivered', attempts: 1, lastStatus: 204 }]);
    expect(await rowOf(lost!.id)).toEqual([{ status: 'pending', attempts: 0, lastStatus: null }]);
    // Settling again changes nothing: each attempt is counted once.
    await recordDelivered(db, [
      { ...kept!, status: 200 },
      { ...moved!, status: 200 },
    ]);
    expect(await rowOf(kept!.id)).toEqual([{ status: 'delivered', attempts: 1, lastStatus: 204 }]);
    expect(await rowOf(moved!.id)).toEqual([{ status: 'delivered', attempts: 1, lastStatus: 204 }]);
  });
});
