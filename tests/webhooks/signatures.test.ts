// Delivery signatures: X-Webhook-Signature (SPEC 6) and the Standard Webhooks headers,
// verified by the `standardwebhooks` package in a real receiver on loopback.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import {
  createSecret,
  signBody,
  standardHeaders,
  standardKey,
} from '../../src/webhooks/signing.js';
import { startTestService, type TestService } from '../support/service.js';
import { CREATE_TASK } from '../support/tasks.js';

interface Hit {
  headers: Record<string, string>;
  raw: Buffer;
}

/** A receiver answering `answers` in turn (the last repeats); `next()` awaits a request. */
interface Receiver {
  url: string;
  next(): Promise<Hit>;
  server: Server;
}

function flat(headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, String(value ?? '')]),
  );
}

async function receiver(answers: number[]): Promise<Receiver> {
  const arrived: Hit[] = [];
  const waiting: ((hit: Hit) => void)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = answers.length > 1 ? answers.shift()! : answers[0]!;
      res.writeHead(status).end();
      const hit = { headers: flat(req.headers), raw: Buffer.concat(chunks) };
      const waiter = waiting.shift();
      if (waiter) waiter(hit);
      else arrived.push(hit);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const next = () => {
    const hit = arrived.shift();
    return hit ? Promise.resolve(hit) : new Promise<Hit>((resolve) => waiting.push(resolve));
  };
  return { url, next, server };
}

const CREATE = `mutation ($url: String!) {
  createWebhook(url: $url, events: ["task.created"]) { secret webhook { id } }
}`;

let svc: TestService;
const servers: Server[] = [];

beforeAll(async () => {
  svc = await startTestService({ env: { SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' } });
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await svc.stop();
});

async function subscribe(answers: number[]) {
  const r = await receiver(answers);
  servers.push(r.server);
  const { body } = await svc.graph(CREATE, { url: r.url });
  expect(body.errors).toBeUndefined();
  const created = body.data?.createWebhook as { secret: string; webhook: { id: string } };
  return { r, secret: created.secret, webhookId: created.webhook.id };
}

async function createTask(title: string): Promise<void> {
  const { body } = await svc.graph(CREATE_TASK, { input: { title } });
  expect(body.errors).toBeUndefined();
}

/**
 * Once the failed first attempt is recorded, makes the retry due now rather than after its
 * backoff (the receiver answers before the worker records the attempt).
 */
async function retryNow(webhookId: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const due = await svc.db.database.db.execute(
      sql`update webhook_deliveries set next_attempt_at = now()
          where webhook_id = ${webhookId} and status = 'pending' and attempts = 1
          returning id`,
    );
    if (due.length > 0) return;
    if (Date.now() > deadline) throw new Error('the first attempt was never recorded');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `verify` as the package runs it at `seconds` (Unix time). */
function verifyAt(seconds: number, secret: string, hit: Hit): unknown {
  const now = jest.spyOn(Date, 'now').mockReturnValue(seconds * 1000);
  try {
    return new Webhook(secret).verify(hit.raw, hit.headers);
  } finally {
    now.mockRestore();
  }
}

describe('the shown secret', () => {
  test('is a Standard Webhooks secret: whsec_ and the base64 of 24 key bytes', async () => {
    const { secret } = await subscribe([200]);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(standardKey(secret)).toHaveLength(24);
    expect(() => new Webhook(secret)).not.toThrow();
  });

  test('a base64url secret issued before keys the same bytes as its base64 rewrite', () => {
    const legacy = 'whsec_-_8AAQIDBAUGBwgJCgsMDQ4PEBESExQV';
    const rewritten = 'whsec_+/8AAQIDBAUGBwgJCgsMDQ4PEBESExQV';
    expect(standardKey(legacy)).toEqual(standardKey(rewritten));
    const body = Buffer.from('{"id":"x"}');
    const headers = standardHeaders(legacy, 'delivery-1', 1_700_000_000, body);
    expect(verifyAt(1_700_000_000, rewritten, { headers, raw: body })).toEqual({ id: 'x' });
  });

  test('new secrets differ', () => {
    expect(createSecret()).not.toBe(createSecret());
  });
});

describe('a real delivery', () => {
  test('verifies with the standardwebhooks package and by X-Webhook-Signature', async () => {
    const { r, secret, webhookId } = await subscribe([204]);
    await createTask('Standard');
    const hit = await r.next();
    const envelope = JSON.parse(hit.raw.toString('utf8')) as { id: string; name: string };
    // The package checks the timestamp against the clock, as any receiver does.
    expect(new Webhook(secret).verify(hit.raw, hit.headers)).toEqual(envelope);
    expect(hit.headers['x-webhook-signature']).toBe(
      `sha256=${createHmac('sha256', secret).update(hit.raw).digest('hex')}`,
    );
    expect(hit.headers['x-webhook-signature']).toBe(signBody(secret, hit.raw));
    const [row] = (await svc.db.database.db.execute(
      sql`select id, event_id from webhook_deliveries where webhook_id = ${webhookId}`,
    )) as unknown as { id: string; event_id: string }[];
    expect(hit.headers['webhook-id']).toBe(row!.id);
    expect(hit.headers['x-webhook-id']).toBe(envelope.id);
    expect(row!.event_id).toBe(envelope.id);
    expect(hit.headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(hit.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  });

  test('a replay is rejected once its timestamp is older than the tolerance', async () => {
    const { r, secret } = await subscribe([204]);
    await createTask('Replayed');
    const hit = await r.next();
    const stamped = Number(hit.headers['webhook-timestamp']);
    expect(verifyAt(stamped + 300, secret, hit)).toEqual(JSON.parse(hit.raw.toString('utf8')));
    expect(() => verifyAt(stamped + 301, secret, hit)).toThrow(
      new WebhookVerificationError('Message timestamp too old'),
    );
    // Re-stamping it fresh breaks the signature: the timestamp is signed.
    const restamped = {
      ...hit,
      headers: { ...hit.headers, 'webhook-timestamp': String(stamped + 301) },
    };
    expect(() => verifyAt(stamped + 301, secret, restamped)).toThrow(
      new WebhookVerificationError('No matching signature found'),
    );
    const tampered = {
      ...hit,
      raw: Buffer.from(hit.raw.toString().replace('Replayed', 'Replaced')),
    };
    expect(() => verifyAt(stamped, secret, tampered)).toThrow(
      new WebhookVerificationError('No matching signature found'),
    );
  });

  test('a retry keeps webhook-id and the body, and signs its own timestamp', async () => {
    const { r, secret, webhookId } = await subscribe([500, 204]);
    await createTask('Retried');
    const first = await r.next();
    expect(verifyAt(Number(first.headers['webhook-timestamp']), secret, first)).toEqual(
      JSON.parse(first.raw.toString('utf8')),
    );
    await retryNow(webhookId);
    const second = await r.next();
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.raw.equals(first.raw)).toBe(true);
    expect(Number(second.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(
      Number(first.headers['webhook-timestamp']),
    );
    expect(new Webhook(secret).verify(second.raw, second.headers)).toEqual(
      JSON.parse(second.raw.toString()),
    );
  });
});
