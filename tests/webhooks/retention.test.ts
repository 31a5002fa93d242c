import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { runHousekeeping, sweepInBatches } from '../../src/auth/housekeeping.js';
import { deleteOldEvents } from '../../src/events/queries.js';
import { events } from '../../src/events/tables.js';
import {
  deleteRemovedWebhooks,
  deleteSettledDeliveries,
  pendingDeliveryOf,
} from '../../src/webhooks/queries.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';
import { captureLogger, testConfig } from '../support/service.js';

// Retention of the webhook outbox (docs/limits.md, "Tables fed from outside"): settled
// deliveries, the events no pending delivery needs, and deleted webhooks nothing names.

const HOUR_MS = 3_600_000;
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(() => db.drop());

async function webhook(workspaceId: string, deletedHoursAgo: number | null = null) {
  const [row] = await db.database.sql<{ id: string }[]>`
    insert into webhooks (workspace_id, url, events, secret, deleted_at)
    values (${workspaceId}, 'https://receiver.example/', '{contact.created}', 'whsec_x',
      now() - ${deletedHoursAgo} * interval '1 hour')
    returning id`;
  return row!.id;
}

async function event(workspaceId: string, hoursAgo: number) {
  const [row] = await db.database.sql<{ id: string }[]>`
    insert into events (workspace_id, name, subject_id, at)
    values (${workspaceId}, 'contact.created', gen_random_uuid(),
      now() - ${hoursAgo} * interval '1 hour')
    returning id`;
  return row!.id;
}

async function delivery(
  workspaceId: string,
  webhookId: string,
  eventId: string,
  status: 'pending' | 'delivered' | 'failed',
  lastAttemptHoursAgo: number,
) {
  const [row] = await db.database.sql<{ id: string }[]>`
    insert into webhook_deliveries (workspace_id, webhook_id, event_id, status, next_attempt_at)
    values (${workspaceId}, ${webhookId}, ${eventId}, ${status},
      now() - ${lastAttemptHoursAgo} * interval '1 hour')
    returning id`;
  return row!.id;
}

async function ids(table: 'events' | 'webhook_deliveries' | 'webhooks', workspaceId: string) {
  const rows = await db.database.sql<{ id: string }[]>`
    select id from ${db.database.sql(table)} where workspace_id = ${workspaceId}`;
  return rows.map((row) => row.id).sort();
}

const WEEK_MS = 168 * HOUR_MS;

describe('settled deliveries', () => {
  test('go a retention after their last attempt; younger and pending ones stay', async () => {
    const { id: ws } = await createWorkspace(db.database.db);
    const hook = await webhook(ws);
    const e = await event(ws, 400);
    const oldDelivered = await delivery(ws, hook, e, 'delivered', 200);
    const oldFailed = await delivery(ws, hook, await event(ws, 400), 'failed', 169);
    const youngFailed = await delivery(ws, hook, await event(ws, 400), 'failed', 100);
    const oldPending = await delivery(ws, hook, await event(ws, 400), 'pending', 300);

    const removed = await sweepInBatches((limit) =>
      deleteSettledDeliveries(db.database.db, WEEK_MS, limit),
    );

    expect(removed).toBeGreaterThanOrEqual(2);
    const left = await ids('webhook_deliveries', ws);
    expect(left).toEqual([youngFailed, oldPending].sort());
    expect(left).not.toContain(oldDelivered);
    expect(left).not.toContain(oldFailed);
  });
});

describe('events', () => {
  test('go a retention after they were recorded unless a pending delivery needs them', async () => {
    const { id: ws } = await createWorkspace(db.database.db);
    const hook = await webhook(ws);
    const old = await event(ws, 200);
    const young = await event(ws, 10);
    const awaited = await event(ws, 500);
    await delivery(ws, hook, awaited, 'pending', 1);
    const settled = await event(ws, 500);
    await delivery(ws, hook, settled, 'failed', 1);

    await sweepInBatches((limit) =>
      deleteOldEvents(db.database.db, WEEK_MS, pendingDeliveryOf(events), limit),
    );

    // A settled delivery (kept for its own retention) never holds its event: it shows the
    // event's id only.
    expect(await ids('events', ws)).toEqual([young, awaited].sort());
    expect(await ids('events', ws)).not.toContain(old);
    expect(await ids('events', ws)).not.toContain(settled);
  });

  test('a pending delivery of another workspace naming the same id holds nothing', async () => {
    const { id: mine } = await createWorkspace(db.database.db);
    const { id: theirs } = await createWorkspace(db.database.db);
    const old = await event(mine, 200);
    await delivery(theirs, await webhook(theirs), old, 'pending', 1);

    await sweepInBatches((limit) =>
      deleteOldEvents(db.database.db, WEEK_MS, pendingDeliveryOf(events), limit),
    );

    expect(await ids('events', mine)).toEqual([]);
  });

  test('rounds stop at their limit, and every old event goes in as many as it takes', async () => {
    const { id: ws } = await createWorkspace(db.database.db);
    await db.database.sql`
      insert into events (workspace_id, name, subject_id, at)
      select ${ws}, 'contact.created', gen_random_uuid(), now() - interval '200 hours'
      from generate_series(1, 25)`;
    const young = await event(ws, 1);
    const rounds: number[] = [];

    const removed = await sweepInBatches(async (limit) => {
      const round = await deleteOldEvents(
        db.database.db,
        WEEK_MS,
        pendingDeliveryOf(events),
        limit,
      );
      rounds.push(round);
      return round;
    }, 10);

    // Full rounds until the last, which finds fewer (other tests' old events may add some).
    expect(rounds.length).toBeGreaterThanOrEqual(3);
    expect(rounds.slice(0, -1).every((round) => round === 10)).toBe(true);
    expect(rounds.at(-1)).toBeLessThan(10);
    expect(removed).toBe(rounds.reduce((sum, n) => sum + n, 0));
    expect(await ids('events', ws)).toEqual([young]);
  });

  test('two sweeps at once share the rows: each goes once, none is left', async () => {
    const { id: ws } = await createWorkspace(db.database.db);
    await db.database.sql`
      insert into events (workspace_id, name, subject_id, at)
      select ${ws}, 'contact.created', gen_random_uuid(), now() - interval '200 hours'
      from generate_series(1, 400)`;
    const sweep = () =>
      sweepInBatches(
        (limit) => deleteOldEvents(db.database.db, WEEK_MS, pendingDeliveryOf(events), limit),
        20,
      );

    const [a, b] = await Promise.all([sweep(), sweep()]);

    expect(a + b).toBeGreaterThanOrEqual(400);
    expect(await ids('events', ws)).toEqual([]);
  });
});

describe('deleted webhooks', () => {
  test('go once deleted a retention ago and no delivery names them', async () => {
    const { id: ws } = await createWorkspace(db.database.db);
    const live = await webhook(ws);
    const gone = await webhook(ws, 200);
    const recent = await webhook(ws, 10);
    const stillNamed = await webhook(ws, 200);
    await delivery(ws, stillNamed, await event(ws, 1), 'failed', 1);

    const removed = await sweepInBatches((limit) =>
      deleteRemovedWebhooks(db.database.db, WEEK_MS, limit),
    );

    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await ids('webhooks', ws)).toEqual([live, recent, stillNamed].sort());
    expect(await ids('webhooks', ws)).not.toContain(gone);
  });
});

describe('housekeeping', () => {
  test('runs the three sweeps under SVC_EVENTS_RETENTION, deliveries before what they name', async () => {
    const { id: ws } = await createWorkspace(db.database.db);
    const hook = await webhook(ws, 5);
    const named = await event(ws, 5);
    await delivery(ws, hook, named, 'delivered', 3);
    const young = await event(ws, 1);
    const youngDelivery = await delivery(ws, await webhook(ws), young, 'delivered', 1);

    const removed = await runHousekeeping({
      config: testConfig({ SVC_EVENTS_RETENTION: '2h' }),
      database: db.database,
      log: captureLogger().log,
    });

    expect(removed['webhook deliveries']).toBeGreaterThanOrEqual(1);
    expect(removed.events).toBeGreaterThanOrEqual(1);
    expect(removed['deleted webhooks']).toBeGreaterThanOrEqual(1);
    expect(await ids('webhook_deliveries', ws)).toEqual([youngDelivery]);
    expect(await ids('events', ws)).toEqual([young]);
    expect(await ids('webhooks', ws)).not.toContain(hook);
  });
});
