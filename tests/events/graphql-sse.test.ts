// graphql-sse's own client, in both of its modes, against a served instance: distinct
// connections (one stream per operation, Yoga's SSE) and a single connection (PUT a
// reservation, GET its stream, POST operations onto it). The guards of streams hold for
// both: sign-in, the per-user stream cap, owner-bound tokens, cross-origin writes, the
// stream's end with its credential.
import { describe, expect, test } from '@jest/globals';
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { bearer, createUser, sessionCookieFor, tokenFor } from '../support/factories.js';
import { useTestService, type TestService } from '../support/service.js';
import { tokenActor } from './actors.js';
import { CORE_EVENT, openStream, record } from './sse.js';

type Result = ExecutionResult<Record<string, unknown>, unknown>;

function clientOf(url: string, headers: Record<string, string>, singleConnection: boolean) {
  return createClient({
    url: `${url}/api/graphql`,
    // A copy: in single-connection mode the client writes its stream token into it.
    headers: { ...headers },
    singleConnection,
    retryAttempts: 0,
    fetchFn: fetch,
  });
}

/**
 * Subscribes and hands results over as they come; `started` resolves once the
 * subscription is registered on the server (it counts an open subscriber more).
 */
function subscribe(client: Client, query: string) {
  const iterator = client.iterate<Record<string, unknown>>({ query });
  return {
    next: async (): Promise<Result | null> => {
      const { done, value } = await iterator.next();
      return done ? null : (value as Result);
    },
    close: () => iterator.return?.(),
  };
}

/**
 * Waits, on the server's own count, until `count` subscribers are open: checked after
 * each turn of the event loop, bounded at 10 s.
 */
async function subscribers(svc: TestService, count: number): Promise<void> {
  const bound = Date.now() + 10_000;
  while (Date.now() < bound) {
    if (svc.service.events.size() >= count) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never reached ${count} subscribers (${svc.service.events.size()})`);
}

async function runOnce(client: Client, query: string): Promise<Result> {
  const iterator = client.iterate<Record<string, unknown>>({ query });
  const { value } = await iterator.next();
  await iterator.return?.();
  return value as Result;
}

describe.each([
  ['distinct connections', false],
  ['a single connection', true],
])('graphql-sse client over %s', (_mode, singleConnection) => {
  const service = useTestService({ listen: true });

  test('a subscription receives the events of its workspace', async () => {
    const svc = service();
    const client = clientOf(svc.url, svc.adminHeaders, singleConnection);
    const before = svc.service.events.size();
    const stream = subscribe(client, CORE_EVENT);
    const first = stream.next();
    // A single connection holds one subscriber of its own (its lifeline), plus the operation.
    await subscribers(svc, before + (singleConnection ? 2 : 1));
    const id = await record(svc.db.database.db, {
      workspaceId: svc.workspace.id,
      name: 'contact.created',
    });
    expect((await first)?.data?.coreEvent).toMatchObject({ id, name: 'contact.created' });
    await stream.close();
    client.dispose();
  });

  test('a query answers once over the same transport', async () => {
    const svc = service();
    const client = clientOf(svc.url, svc.adminHeaders, singleConnection);
    const result = await runOnce(client, '{ me { id } }');
    expect(result.errors).toBeUndefined();
    expect(result.data?.me).toEqual({ id: svc.admin.id });
    client.dispose();
  });

  test('an anonymous subscription is refused', async () => {
    const svc = service();
    const client = clientOf(svc.url, {}, singleConnection);
    const iterator = client.iterate({ query: CORE_EVENT });
    if (singleConnection) {
      // The reservation itself needs a credential: the client's PUT is refused with a 401.
      await expect(iterator.next()).rejects.toThrow('Server responded with 401: Unauthorized');
    } else {
      const { value } = await iterator.next();
      expect((value as Result).errors?.[0]).toMatchObject({
        extensions: { code: 'UNAUTHENTICATED' },
      });
    }
    client.dispose();
  });
});

describe('single-connection streams and the stream cap (SVC_STREAMS_PER_USER=1)', () => {
  const service = useTestService({ env: { SVC_STREAMS_PER_USER: '1' }, listen: true });

  test('a subscription on a single connection holds the stream slot', async () => {
    const svc = service();
    const client = clientOf(svc.url, svc.adminHeaders, true);
    const stream = subscribe(client, CORE_EVENT);
    const first = stream.next();
    await subscribers(svc, 2);

    // A distinct-connection stream now finds the cap taken, and the answer names it.
    const distinct = await openStream(svc.url, svc.adminHeaders);
    expect(distinct.status).toBe(429);
    expect(distinct.headers.get('retry-after')).toBe('1');
    await distinct.ended;

    // A second subscription on the same connection is refused in its stream.
    const second = subscribe(client, CORE_EVENT);
    const answer = await second.next();
    expect(answer?.errors?.[0]).toMatchObject({
      message:
        'too many open event streams: at most 1 per user; close one or try again in 1 second',
      extensions: {
        code: 'RATE_LIMITED',
        reason: 'rate_limited',
        meta: { retryAfter: 1, limit: 'streams_per_user', max: 1 },
      },
    });
    expect(await second.next()).toBeNull();

    // Queries still run on it: they take operation slots, not stream slots.
    expect((await runOnce(client, '{ me { id } }')).data?.me).toEqual({ id: svc.admin.id });

    const id = await record(svc.db.database.db, {
      workspaceId: svc.workspace.id,
      name: 'contact.created',
    });
    expect((await first)?.data?.coreEvent).toMatchObject({ id });
    await stream.close();
    client.dispose();
  });

  test('the distinct-connection 429 names the stream cap', async () => {
    const svc = service();
    const first = await openStream(svc.url, svc.adminHeaders);
    expect(first.status).toBe(200);
    const response = await fetch(`${svc.url}/api/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...svc.adminHeaders,
      },
      body: JSON.stringify({ query: CORE_EVENT }),
    });
    expect(response.status).toBe(429);
    const body = (await response.json()) as { errors: { message: string; extensions: unknown }[] };
    expect(body.errors[0]?.message).toBe(
      'too many open event streams: at most 1 per user; close one or try again in 1 second',
    );
    expect(body.errors[0]?.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      reason: 'rate_limited',
      retryAfter: 1,
      meta: { retryAfter: 1, limit: 'streams_per_user', max: 1 },
    });
    first.close();
    await first.ended;
  });
});

describe('single-connection tokens', () => {
  const service = useTestService({ env: { SVC_STREAMS_PER_USER: '2' }, listen: true });

  async function reserve(headers: Record<string, string>): Promise<Response> {
    return fetch(`${service().url}/api/graphql`, { method: 'PUT', headers });
  }

  test('a token is the reserving credential’s: another account finds no stream', async () => {
    const svc = service();
    const reserved = await reserve(svc.adminHeaders);
    expect(reserved.status).toBe(201);
    const token = await reserved.text();
    const other = await createUser(svc.db.database.db, svc.workspace, { role: 'admin' });
    const otherHeaders = bearer(await tokenFor(svc.db.database.db, other));
    const stolen = await fetch(`${svc.url}/api/graphql`, {
      headers: {
        accept: 'text/event-stream',
        'x-graphql-event-stream-token': token,
        ...otherHeaders,
      },
    });
    expect(stolen.status).toBe(404);
    expect(await stolen.json()).toEqual({ error: 'event stream not found' });
    // Nor may it post operations onto it.
    const posted = await fetch(`${svc.url}/api/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-graphql-event-stream-token': token,
        ...otherHeaders,
      },
      body: JSON.stringify({ query: '{ me { id } }', extensions: { operationId: 'x' } }),
    });
    expect(posted.status).toBe(404);
  });

  test('reservations are capped per user like streams', async () => {
    const svc = service();
    const user = await createUser(svc.db.database.db, svc.workspace, { role: 'member' });
    const headers = bearer(await tokenFor(svc.db.database.db, user));
    expect((await reserve(headers)).status).toBe(201);
    expect((await reserve(headers)).status).toBe(201);
    const third = await reserve(headers);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
  });

  test('a reservation from another origin is refused as a cross-origin write', async () => {
    const svc = service();
    const refused = await reserve({ ...svc.adminHeaders, 'sec-fetch-site': 'cross-site' });
    expect(refused.status).toBe(403);
  });

  test('revoking the token ends the single connection and its subscription', async () => {
    const svc = service();
    const user = await createUser(svc.db.database.db, svc.workspace, { role: 'member' });
    const revoked = await tokenActor(svc.db.database.db, user);
    const client = clientOf(svc.url, bearer(revoked.token), true);
    const before = svc.service.events.size();
    const stream = subscribe(client, CORE_EVENT);
    const ended = stream.next();
    await subscribers(svc, before + 2);
    const { body } = await svc.graph(
      'mutation ($id: UUID!) { apiTokenRevoke(id: $id) { revokedAt } }',
      { id: revoked.actor.token?.id },
      { cookie: await sessionCookieFor(svc.db.database.db, user) },
    );
    expect(body.errors).toBeUndefined();
    // The server completes the subscription; the client's iterator ends without a result.
    expect(await ended).toBeNull();
    client.dispose();
  });
});
