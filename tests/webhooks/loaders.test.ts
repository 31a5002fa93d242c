// Webhook.deliveries across a page of webhooks loads in one read (no statement a webhook).
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { drizzle } from 'drizzle-orm/postgres-js';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import { webhookLoaders } from '../../src/webhooks/loaders.js';
import {
  webhookDeliveries,
  webhooks,
  type DeliveryStatus,
  type Webhook,
} from '../../src/webhooks/tables.js';
import type { Workspace } from '../../src/workspaces/tables.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';

// A database without a service: no worker claims (and changes) the deliveries written here.
let testDb: TestDatabase;
let db: Db;
let workspace: Workspace;
/** Each webhook and the ids of its deliveries, newest first. */
const made: { webhook: Webhook; deliveries: { id: string; status: DeliveryStatus }[] }[] = [];

async function insertWebhook(workspaceId: string): Promise<Webhook> {
  const [row] = await db
    .insert(webhooks)
    .values({
      workspaceId,
      url: 'https://hooks.example.com/in',
      events: ['task.created'],
      secret: 'whsec_test',
    })
    .returning();
  return row!;
}

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = testDb.database.db;
  workspace = await createWorkspace(db);
  const base = Date.parse('2025-03-01T00:00:00Z');
  for (let w = 0; w < 6; w += 1) {
    const webhook = await insertWebhook(workspace.id);
    const deliveries: { id: string; status: DeliveryStatus }[] = [];
    // Webhook w has w deliveries, every other one failed; later ones are newer.
    for (let d = 0; d < w; d += 1) {
      const status: DeliveryStatus = d % 2 === 0 ? 'failed' : 'pending';
      const [row] = await db
        .insert(webhookDeliveries)
        .values({
          workspaceId: workspace.id,
          webhookId: webhook.id,
          eventId: randomUUID(),
          status,
          createdAt: new Date(base + (w * 10 + d) * 1000),
        })
        .returning({ id: webhookDeliveries.id });
      deliveries.unshift({ id: row!.id, status });
    }
    made.push({ webhook, deliveries });
  }
});

afterAll(() => testDb.drop());

/** A loader set over a drizzle instance that records every statement it sends. */
function counted(workspaceId: string) {
  const statements: string[] = [];
  const logged = drizzle(testDb.database.sql, {
    casing: 'snake_case',
    logger: { logQuery: (query) => void statements.push(query) },
  });
  return { statements, loaders: webhookLoaders(logged, workspaceId) };
}

describe('the deliveries loader', () => {
  test("six webhooks' latest deliveries cost one statement, newest first and capped", async () => {
    const { statements, loaders } = counted(workspace.id);
    const loader = loaders.deliveries(3, null);
    const answers = await Promise.all(made.map(({ webhook }) => loader.load(webhook.id)));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/from "webhook_deliveries"/);
    expect(answers.map((list) => list.map((d) => d.id))).toEqual(
      made.map(({ deliveries }) => deliveries.slice(0, 3).map((d) => d.id)),
    );
    for (const [i, list] of answers.entries()) {
      for (const delivery of list) expect(delivery.webhookId).toBe(made[i]!.webhook.id);
    }
  });

  test('a status keeps only deliveries in it, still one statement', async () => {
    const { statements, loaders } = counted(workspace.id);
    const loader = loaders.deliveries(10, 'failed');
    const answers = await Promise.all(made.map(({ webhook }) => loader.load(webhook.id)));
    expect(statements).toHaveLength(1);
    expect(answers.map((list) => list.map((d) => d.id))).toEqual(
      made.map(({ deliveries }) =>
        deliveries.filter((d) => d.status === 'failed').map((d) => d.id),
      ),
    );
  });

  test('each (first, status) asked gets its own loader, reused within the request', () => {
    const { loaders } = counted(workspace.id);
    expect(loaders.deliveries(5, null)).toBe(loaders.deliveries(5, null));
    expect(loaders.deliveries(5, null)).not.toBe(loaders.deliveries(6, null));
    expect(loaders.deliveries(5, null)).not.toBe(loaders.deliveries(5, 'failed'));
  });

  test("another workspace's loader sees none of them", async () => {
    const other = await createWorkspace(db);
    const { loaders } = counted(other.id);
    const loader = loaders.deliveries(10, null);
    const answers = await Promise.all(made.map(({ webhook }) => loader.load(webhook.id)));
    expect(answers).toEqual(made.map(() => []));
  });
});
