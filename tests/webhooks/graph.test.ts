// Webhook subscriptions (SPEC 2.8, 5, 7.3): createWebhook, webhooks, deleteWebhook.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import type { User } from '../../src/users/tables.js';
import { bearer, createUser, tokenFor } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';
import type { GraphBody } from '../support/service.js';

function expectRefusal(body: GraphBody, expected: { code: string; reason: string; meta?: object }) {
  expect(body.errors?.[0]?.extensions).toEqual(
    expect.objectContaining({ code: expected.code, reason: expected.reason }),
  );
  if (expected.meta) expect(body.errors?.[0]?.extensions.meta).toEqual(expected.meta);
}

const CREATE = `mutation ($url: String!, $events: [String!]!) {
  createWebhook(url: $url, events: $events) { secret webhook { id url events } }
}`;
const LIST = `query ($first: Int, $after: String) {
  webhooks(first: $first, after: $after) {
    edges { cursor node { id url events } } pageInfo { hasNextPage endCursor }
  }
}`;
const DELETE = `mutation ($id: UUID!) { deleteWebhook(id: $id) }`;

let svc: TestService;
let db: Db;
let member: User;
let memberHeaders: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({
    env: { SVC_WEBHOOK_ALLOWED_HOSTS: '10.9.0.0/16,hooks:8080,localhost:9' },
  });
  db = svc.db.database.db;
  member = await createUser(db, svc.workspace);
  memberHeaders = bearer(await tokenFor(db, member));
});

afterAll(() => svc.stop());

describe('createWebhook refusals', () => {
  test.each([
    ['not a url', 'webhook_url_invalid'],
    ['ftp://example.com/x', 'webhook_url_invalid'],
    ['http://127.0.0.1:5678/x', 'webhook_url_internal'],
    ['http://[::1]/x', 'webhook_url_internal'],
    ['http://192.168.1.1/x', 'webhook_url_internal'],
    ['http://169.254.169.254/latest', 'webhook_url_internal'],
    ['http://[::ffff:127.0.0.1]/x', 'webhook_url_internal'],
  ])('%s: %s', async (url, reason) => {
    const { body } = await svc.graph(CREATE, { url, events: ['contact.created'] });
    expectRefusal(body, { code: 'VALIDATION', reason });
  });

  test('an IPv4-compatible loopback literal ([::127.0.0.1]) is refused and not stored', async () => {
    const { body } = await svc.graph(CREATE, {
      url: 'http://[::127.0.0.1]/',
      events: ['contact.created'],
    });
    expectRefusal(body, { code: 'VALIDATION', reason: 'webhook_url_internal' });
    const listed = await svc.graph(LIST, { first: 200 });
    const urls = (listed.body.data?.webhooks as { edges: { node: { url: string } }[] }).edges.map(
      (e) => e.node.url,
    );
    expect(urls).not.toContain('http://[::7f00:1]/');
  });

  test('no events', async () => {
    const { body } = await svc.graph(CREATE, { url: 'https://example.com/h', events: [] });
    expectRefusal(body, { code: 'VALIDATION', reason: 'webhook_events_required' });
  });

  test('an unknown event', async () => {
    const { body } = await svc.graph(CREATE, {
      url: 'https://example.com/h',
      events: ['contact.created', 'contact.exploded'],
    });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'event_unknown',
      meta: { event: 'contact.exploded' },
    });
  });

  test('allowed internal addresses and names pass', async () => {
    for (const url of ['http://10.9.1.1:1234/h', 'http://hooks:8080/h', 'http://localhost:9/h']) {
      const { body } = await svc.graph(CREATE, { url, events: ['chat.message.received'] });
      expect(body.errors).toBeUndefined();
    }
  });
});

describe('an internal address is refused naming SVC_WEBHOOK_ALLOWED_HOSTS', () => {
  test('an IP literal', async () => {
    const { body } = await svc.graph(CREATE, {
      url: 'http://127.0.0.1:5678/x',
      events: ['contact.created'],
    });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'webhook_url_internal',
      meta: { host: '127.0.0.1', address: '127.0.0.1', allowable: true },
    });
    expect(body.errors?.[0]?.message).toBe(
      'the webhook URL points at 127.0.0.1, an internal address SVC_WEBHOOK_ALLOWED_HOSTS does not allow',
    );
  });

  test('a name resolving to loopback (localhost, from the hosts file) is refused at creation', async () => {
    const { body } = await svc.graph(CREATE, {
      url: 'http://localhost:5678/x',
      events: ['contact.created'],
    });
    expectRefusal(body, { code: 'VALIDATION', reason: 'webhook_url_internal' });
    const { meta } = body.errors![0]!.extensions;
    expect(meta).toMatchObject({ host: 'localhost', allowable: true });
    expect(['127.0.0.1', '::1']).toContain(meta?.address);
    expect(body.errors?.[0]?.message).toBe(
      `the webhook URL's host localhost resolves to ${String(meta?.address)}, an internal address SVC_WEBHOOK_ALLOWED_HOSTS does not allow`,
    );
    const listed = await svc.graph(LIST, { first: 200 });
    const urls = (listed.body.data?.webhooks as { edges: { node: { url: string } }[] }).edges.map(
      (e) => e.node.url,
    );
    expect(urls).not.toContain('http://localhost:5678/x');
  });

  test('a metadata address says that listing it would not help', async () => {
    const { body } = await svc.graph(CREATE, {
      url: 'http://169.254.169.254/latest',
      events: ['contact.created'],
    });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'webhook_url_internal',
      meta: { host: '169.254.169.254', address: '169.254.169.254', allowable: false },
    });
    expect(body.errors?.[0]?.message).toBe(
      'the webhook URL points at 169.254.169.254, a link-local or cloud metadata address, refused even when SVC_WEBHOOK_ALLOWED_HOSTS lists it',
    );
  });
});

describe('the automation flow (SPEC 5)', () => {
  const scopes = ['meta:read', 'webhooks:write', 'tasks:write', 'contacts:read'];

  test('an admin token with the automation scopes registers, lists and deletes', async () => {
    const headers = bearer(await tokenFor(db, svc.admin, { scopes }));
    const created = await svc.graph(
      CREATE,
      { url: 'https://93.184.216.34/hook', events: ['task.created', 'contact.created'] },
      headers,
    );
    expect(created.body.errors).toBeUndefined();
    const payload = created.body.data?.createWebhook as {
      secret: string;
      webhook: { id: string; events: string[] };
    };
    expect(payload.secret).toMatch(/^whsec_/);
    expect(payload.webhook.events).toEqual(['task.created', 'contact.created']);
    const listed = await svc.graph(LIST, { first: 200 }, headers);
    const ids = (listed.body.data?.webhooks as { edges: { node: { id: string } }[] }).edges.map(
      (e) => e.node.id,
    );
    expect(ids).toContain(payload.webhook.id);
    const deleted = await svc.graph(DELETE, { id: payload.webhook.id }, headers);
    expect(deleted.body.data?.deleteWebhook).toBe(true);
    const again = await svc.graph(DELETE, { id: payload.webhook.id }, headers);
    expectRefusal(again.body, { code: 'NOT_FOUND', reason: 'webhook_not_found' });
  });

  test('a member with the same scopes cannot register', async () => {
    const headers = bearer(await tokenFor(db, member, { scopes }));
    const { body } = await svc.graph(
      CREATE,
      { url: 'https://93.184.216.34/hook', events: ['task.created'] },
      headers,
    );
    expect(body.errors?.[0]?.message).toBe('admin required');
    expect(body.errors?.[0]?.extensions.capability).toBe('manage_webhooks');
  });

  test('a token without webhooks:write is told about the scope', async () => {
    const headers = bearer(await tokenFor(db, svc.admin, { scopes: ['contacts:read'] }));
    const { body } = await svc.graph(
      CREATE,
      { url: 'https://93.184.216.34/hook', events: ['task.created'] },
      headers,
    );
    expect(body.errors?.[0]?.extensions.scope).toBe('webhooks:write');
  });
});

describe('ownership', () => {
  test('without manage_webhooks an account lists and deletes only its own', async () => {
    const adminHook = await svc.graph(CREATE, {
      url: 'https://93.184.216.34/a',
      events: ['task.created'],
    });
    const adminId = (adminHook.body.data?.createWebhook as { webhook: { id: string } }).webhook.id;
    const own = randomUUID();
    await db.execute(
      `insert into webhooks (workspace_id, id, url, events, secret, created_by)
       values ('${svc.workspace.id}', '${own}', 'https://m.example.com/', '{task.created}', 's', '${member.id}')` as never,
    );
    const listed = await svc.graph(LIST, {}, memberHeaders);
    const ids = (listed.body.data?.webhooks as { edges: { node: { id: string } }[] }).edges.map(
      (e) => e.node.id,
    );
    expect(ids).toEqual([own]);
    const refused = await svc.graph(DELETE, { id: adminId }, memberHeaders);
    expectRefusal(refused.body, { code: 'NOT_FOUND', reason: 'webhook_not_found' });
    const deleted = await svc.graph(DELETE, { id: own }, memberHeaders);
    expect(deleted.body.data?.deleteWebhook).toBe(true);
    const adminList = await svc.graph(LIST, { first: 200 });
    const adminIds = (
      adminList.body.data?.webhooks as { edges: { node: { id: string } }[] }
    ).edges.map((e) => e.node.id);
    expect(adminIds).toContain(adminId);
    expect(adminIds).not.toContain(own);
  });

  test('paging', async () => {
    const first = await svc.graph(LIST, { first: 1 });
    const page = first.body.data?.webhooks as {
      edges: { node: { id: string } }[];
      pageInfo: { hasNextPage: boolean; endCursor: string };
    };
    expect(page.edges).toHaveLength(1);
    expect(page.pageInfo.hasNextPage).toBe(true);
    const next = await svc.graph(LIST, { first: 1, after: page.pageInfo.endCursor });
    const nextPage = next.body.data?.webhooks as { edges: { node: { id: string } }[] };
    expect(nextPage.edges[0]?.node.id).not.toBe(page.edges[0]?.node.id);
  });
});
