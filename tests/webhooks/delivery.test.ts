// Webhook delivery (SPEC 3, 6, 8.2) to real HTTP receivers on loopback.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { sendOnce } from '../../src/webhooks/send.js';
import { startTestService, useTestService, type TestService } from '../support/service.js';
import { CREATE_TASK } from '../support/tasks.js';

interface Hit {
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

interface Receiver {
  url: string;
  hits: Hit[];
  /** Status codes answered in turn; the last one repeats. */
  answers: number[];
  server: Server;
}

async function receiver(answers: number[] = [200], host = '127.0.0.1'): Promise<Receiver> {
  const hits: Hit[] = [];
  const r = { hits, answers } as Receiver;
  r.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ headers: req.headers, raw: Buffer.concat(chunks) });
      const status = r.answers.length > 1 ? r.answers.shift()! : r.answers[0]!;
      if (status >= 300 && status < 400) res.setHeader('location', `${r.url}/elsewhere`);
      res.writeHead(status).end('ok');
    });
  });
  await new Promise<void>((resolve) => r.server.listen(0, host, resolve));
  r.url = `http://${host}:${(r.server.address() as AddressInfo).port}`;
  return r;
}

const receivers: Receiver[] = [];
async function open(answers?: number[]): Promise<Receiver> {
  const r = await receiver(answers);
  receivers.push(r);
  return r;
}

async function until<T>(
  probe: () => Promise<T | undefined | null | false>,
  ms = 15000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const CREATE = `mutation ($url: String!, $events: [String!]!) {
  createWebhook(url: $url, events: $events) { secret webhook { id } }
}`;
const DELIVERIES = `query { webhooks(first: 10) { edges { node { id
  deliveries(first: 5) { eventId status attempts lastStatus lastError } } } } }`;

interface DeliveryRow {
  event_id: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
}

async function register(svc: TestService, url: string): Promise<{ id: string; secret: string }> {
  const { body } = await svc.graph(CREATE, { url, events: ['task.created'] });
  expect(body.errors).toBeUndefined();
  const payload = body.data?.createWebhook as { secret: string; webhook: { id: string } };
  return { id: payload.webhook.id, secret: payload.secret };
}

/** A webhook written straight to the table, past createWebhook's checks. */
async function insertWebhook(svc: TestService, url: string): Promise<string> {
  const rows = (await svc.db.database.db.execute(
    sql`insert into webhooks (workspace_id, url, events, secret, created_by)
        values (${svc.workspace.id}, ${url}, '{task.created}', 'secret', ${svc.admin.id})
        returning id`,
  )) as unknown as { id: string }[];
  return rows[0]!.id;
}

async function deliveriesOf(svc: TestService, webhookId: string): Promise<DeliveryRow[]> {
  return (await svc.db.database.db.execute(
    sql`select event_id, status, attempts, last_status, last_error from webhook_deliveries
        where webhook_id = ${webhookId}`,
  )) as unknown as DeliveryRow[];
}

/** Makes pending deliveries due now instead of after their backoff. */
async function dueNow(svc: TestService, webhookId: string): Promise<void> {
  await svc.db.database.db.execute(
    sql`update webhook_deliveries set next_attempt_at = now()
        where webhook_id = ${webhookId} and status = 'pending'`,
  );
}

async function createTask(svc: TestService, title = 'Call back'): Promise<void> {
  const { body } = await svc.graph(CREATE_TASK, { input: { title } });
  expect(body.errors).toBeUndefined();
}

describe('allowed loopback receiver (127.0.0.1/32)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' } });
  });
  afterAll(() => svc.stop());

  test('the envelope is signed over the raw body', async () => {
    const r = await open([200]);
    const hook = await register(svc, `${r.url}/hook`);
    await createTask(svc, 'Signed');
    const hit = await until(async () => r.hits[0]);
    const expected = createHmac('sha256', hook.secret).update(hit.raw).digest('hex');
    const header = String(hit.headers['x-webhook-signature']);
    expect(header.startsWith('sha256=')).toBe(true);
    expect(timingSafeEqual(Buffer.from(header.slice(7)), Buffer.from(expected))).toBe(true);
    const envelope = JSON.parse(hit.raw.toString('utf8')) as Record<string, unknown>;
    expect(Object.keys(envelope).sort()).toEqual(['at', 'data', 'id', 'name']);
    expect(envelope.name).toBe('task.created');
    expect((envelope.data as { title: string }).title).toBe('Signed');
    expect(hit.headers['x-webhook-id']).toBe(envelope.id);
    expect(hit.headers['x-webhook-event']).toBe('task.created');
    const rows = await until(async () => {
      const found = await deliveriesOf(svc, hook.id);
      return found[0]?.status === 'delivered' && found;
    });
    expect(rows[0]).toMatchObject({ attempts: 1, last_status: 200, event_id: envelope.id });
    const { body } = await svc.graph(DELIVERIES);
    const node = (
      body.data?.webhooks as { edges: { node: { id: string; deliveries: unknown[] } }[] }
    ).edges.find((e) => e.node.id === hook.id)?.node;
    expect(node?.deliveries).toEqual([
      {
        eventId: envelope.id,
        status: 'delivered',
        attempts: 1,
        lastStatus: 200,
        lastError: null,
      },
    ]);
  });

  test('an event its subscriptions do not list is not enqueued', async () => {
    const r = await open([200]);
    const { body } = await svc.graph(CREATE, {
      url: `${r.url}/h`,
      events: ['contact.created'],
    });
    const id = (body.data?.createWebhook as { webhook: { id: string } }).webhook.id;
    await createTask(svc);
    expect(await deliveriesOf(svc, id)).toEqual([]);
  });

  test('a 500 is retried with the same id', async () => {
    const r = await open([500, 200]);
    const hook = await register(svc, `${r.url}/hook`);
    await createTask(svc);
    await until(async () => (await deliveriesOf(svc, hook.id))[0]?.attempts === 1);
    const [row] = await deliveriesOf(svc, hook.id);
    expect(row).toMatchObject({ status: 'pending', last_status: 500 });
    await dueNow(svc, hook.id);
    await until(async () => (await deliveriesOf(svc, hook.id))[0]?.status === 'delivered');
    expect(r.hits).toHaveLength(2);
    const ids = r.hits.map((h) => (JSON.parse(h.raw.toString()) as { id: string }).id);
    expect(ids[0]).toBe(ids[1]);
    expect(r.hits[0]!.raw.equals(r.hits[1]!.raw)).toBe(true);
    expect((await deliveriesOf(svc, hook.id))[0]?.attempts).toBe(2);
  });

  test('a 302 is not followed and leaves the delivery pending', async () => {
    const r = await open([302, 200]);
    const hook = await register(svc, `${r.url}/hook`);
    await createTask(svc);
    await until(async () => (await deliveriesOf(svc, hook.id))[0]?.attempts === 1);
    expect((await deliveriesOf(svc, hook.id))[0]).toMatchObject({
      status: 'pending',
      last_status: 302,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Only the hook path was asked; /elsewhere never was.
    expect(r.hits).toHaveLength(1);
    await dueNow(svc, hook.id);
    await until(async () => (await deliveriesOf(svc, hook.id))[0]?.status === 'delivered');
    const ids = r.hits.map((h) => (JSON.parse(h.raw.toString()) as { id: string }).id);
    expect(new Set(ids).size).toBe(1);
    expect(r.hits).toHaveLength(2);
  });

  test('a receiver that does not answer times out', async () => {
    const hang = createServer(() => {});
    await new Promise<void>((resolve) => hang.listen(0, '127.0.0.1', resolve));
    const port = (hang.address() as AddressInfo).port;
    try {
      const outcome = await sendOnce({
        url: `http://127.0.0.1:${port}/`,
        body: Buffer.from('{}'),
        headers: {},
        allow: { allowedCidrs: [], allowedHostPorts: [{ host: '127.0.0.1', port }] },
        timeoutMs: 300,
      });
      expect(outcome).toEqual({ kind: 'error', message: 'no answer within 300 ms' });
    } finally {
      hang.closeAllConnections();
      hang.close();
    }
  });
});

describe('loopback not allowed', () => {
  const service = useTestService();

  test('an internal address is refused at delivery and counts as a failed attempt', async () => {
    const svc = service();
    const r = await open([200]);
    // Registered before the operator narrowed the list: written straight to the table.
    const id = await insertWebhook(svc, `${r.url}/hook`);
    await createTask(svc);
    const [row] = await until(async () => {
      const found = await deliveriesOf(svc, id);
      return found[0]?.attempts === 1 && found;
    });
    expect(row).toMatchObject({ status: 'pending', last_status: null });
    expect(row?.last_error).toContain('address refused: 127.0.0.1');
    expect(r.hits).toHaveLength(0);
    expect(
      svc.lines.some((l) => l.level === 'warn' && l.host === '127.0.0.1' && l.webhookId === id),
    ).toBe(true);
  });

  test('a name resolving to loopback is refused at creation, naming the variable', async () => {
    const svc = service();
    const r = await open([200]);
    const url = `http://localhost:${new URL(r.url).port}/hook`;
    const { body } = await svc.graph(CREATE, { url, events: ['task.created'] });
    expect(body.errors?.[0]?.extensions.reason).toBe('webhook_url_internal');
    expect(body.errors?.[0]?.message).toContain('SVC_WEBHOOK_ALLOWED_HOSTS');
  });

  test('a name resolving to loopback is still refused at delivery', async () => {
    const svc = service();
    const r = await open([200]);
    const url = `http://localhost:${new URL(r.url).port}/hook`;
    // Accepted when it resolved elsewhere (DNS answers change): written straight to the table.
    const id = await insertWebhook(svc, url);
    await createTask(svc);
    const [row] = await until(async () => {
      const found = await deliveriesOf(svc, id);
      return found[0]?.attempts === 1 && found;
    });
    expect(row?.status).toBe('pending');
    expect(row?.last_error).toMatch(
      /^address refused: localhost \((127\.0\.0\.1|::1)\), an internal address SVC_WEBHOOK_ALLOWED_HOSTS does not allow$/,
    );
    expect(r.hits).toHaveLength(0);
    expect(
      svc.lines.some(
        (l) =>
          l.level === 'warn' &&
          l.host === 'localhost' &&
          String(l.msg).includes('SVC_WEBHOOK_ALLOWED_HOSTS'),
      ),
    ).toBe(true);
  });
});

afterAll(async () => {
  for (const r of receivers) {
    r.server.closeAllConnections();
    await new Promise((resolve) => r.server.close(resolve));
  }
});
