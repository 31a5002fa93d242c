// The one outbound HTTP request (src/outbound/request.ts): SPEC 8.2's address rules on every
// hop, the connection pinned to the judged address, redirects only when asked, credentials
// kept to their origin, time and size bounded. Real HTTP servers on loopback; names go
// through a substitute resolver, as the webhook tests do.
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import type { AllowList, Resolve } from '../../src/outbound/address.js';
import { fetchOutbound } from '../../src/outbound/plugin.js';
import { sendOnce } from '../../src/webhooks/send.js';
import {
  answerText,
  describeOutcome,
  requestOutbound,
  type OutboundCall,
  type OutboundResult,
} from '../../src/outbound/request.js';

interface Hit {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  server: Server;
  port: number;
  origin: string;
  hits: Hit[];
}

type Handler = (res: ServerResponse, hit: Hit) => void;

const receivers: Receiver[] = [];

/** A loopback server recording each request and answering it with `handle`. */
async function receiver(handle: Handler): Promise<Receiver> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hit = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      hits.push(hit);
      handle(res, hit);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const made = { server, port, origin: `http://127.0.0.1:${port}`, hits };
  receivers.push(made);
  return made;
}

afterAll(async () => {
  for (const r of receivers) {
    r.server.closeAllConnections();
    await new Promise((resolve) => r.server.close(resolve));
  }
});

const ok: Handler = (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');

/** An allow list in SVC_OUTBOUND_ALLOWED_HOSTS's words. */
function allowList(text: string): AllowList {
  const { config, problems } = loadConfig({ SVC_OUTBOUND_ALLOWED_HOSTS: text });
  expect(problems).toEqual([]);
  return config.outbound;
}

const none = allowList('');

function call(url: string, extra: Partial<OutboundCall> = {}): Promise<OutboundResult> {
  return requestOutbound({
    url,
    allow: none,
    allowSetting: 'SVC_OUTBOUND_ALLOWED_HOSTS',
    ...extra,
  });
}

/** A resolver answering `address` for every name, counting its lookups. */
function resolverTo(address: string): Resolve & { calls: string[] } {
  const calls: string[] = [];
  const resolve = (host: string) => {
    calls.push(host);
    return Promise.resolve([{ address, family: address.includes(':') ? 6 : 4 }]);
  };
  return Object.assign(resolve, { calls });
}

describe('address rules', () => {
  let target: Receiver;
  beforeAll(async () => {
    target = await receiver(ok);
  });

  test('a private literal is refused before connecting', async () => {
    const result = await call(`${target.origin}/secret?token=abc`);
    expect(result).toEqual({
      kind: 'refused',
      host: '127.0.0.1',
      address: '127.0.0.1',
      allowable: true,
      redirects: 0,
      setting: 'SVC_OUTBOUND_ALLOWED_HOSTS',
    });
    expect(target.hits).toHaveLength(0);
    expect(describeOutcome(result as Exclude<OutboundResult, { kind: 'answered' }>)).toBe(
      '127.0.0.1 is an internal address SVC_OUTBOUND_ALLOWED_HOSTS does not allow',
    );
  });

  test('a name resolving to a private address is refused before connecting', async () => {
    const result = await call(`http://files.example:${target.port}/x`, {
      resolve: resolverTo('127.0.0.1'),
    });
    expect(result).toMatchObject({ kind: 'refused', host: 'files.example', address: '127.0.0.1' });
    expect(target.hits).toHaveLength(0);
  });

  test('a name whose answer mixes a public and a private address is refused', async () => {
    const result = await call('http://mixed.example/', {
      resolve: () =>
        Promise.resolve([
          { address: '93.184.216.34', family: 4 },
          { address: '10.0.0.5', family: 4 },
        ]),
    });
    expect(result).toMatchObject({ kind: 'refused', address: '10.0.0.5', allowable: true });
  });

  test.each([
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ['http://100.100.100.200/', '100.100.100.200'],
    ['http://[fd00:ec2::254]/', 'fd00:ec2::254'],
  ])('the metadata address %s is refused even when listed', async (url, address) => {
    const listed = allowList(
      `0.0.0.0/0,::/0,${address.includes(':') ? `[${address}]` : address}:80`,
    );
    const result = await call(url, { allow: listed });
    expect(result).toMatchObject({ kind: 'refused', address, allowable: false });
    expect(describeOutcome(result as Exclude<OutboundResult, { kind: 'answered' }>)).toBe(
      `${address} is a link-local or cloud metadata address, refused even when SVC_OUTBOUND_ALLOWED_HOSTS lists it`,
    );
  });

  test('a name resolving to a metadata address is refused even when its host:port is listed', async () => {
    const result = await call('http://metadata.internal:80/', {
      allow: allowList('metadata.internal:80'),
      resolve: resolverTo('169.254.169.254'),
    });
    expect(result).toMatchObject({ kind: 'refused', allowable: false });
  });

  test('a listed address is reached, once looked up: the connection goes to the checked address', async () => {
    const resolve = resolverTo('127.0.0.1');
    const result = await call(`http://files.example:${target.port}/ok`, {
      allow: allowList('127.0.0.1/32'),
      resolve,
    });
    expect(result).toMatchObject({ kind: 'answered', status: 200, size: 5 });
    expect(answerText(result as Extract<OutboundResult, { kind: 'answered' }>)).toBe('hello');
    // One lookup: the HTTP client asked none of its own (no second answer to rebind to).
    expect(resolve.calls).toEqual(['files.example']);
    expect(target.hits.at(-1)?.headers.host).toBe(`files.example:${target.port}`);
  });

  test('a host:port entry opens that port only', async () => {
    const other = await receiver(ok);
    const allow = allowList(`127.0.0.1:${target.port}`);
    expect(await call(`${target.origin}/`, { allow })).toMatchObject({ kind: 'answered' });
    expect(await call(`${other.origin}/`, { allow })).toMatchObject({ kind: 'refused' });
    expect(other.hits).toHaveLength(0);
  });

  test('a URL that is not http or https, or carries credentials, is not requested', async () => {
    for (const url of [
      'ftp://example.com/',
      'file:///etc/passwd',
      'http://u:p@example.com/',
      'x',
    ]) {
      expect(await call(url)).toMatchObject({ kind: 'failed', reason: 'invalid_url' });
    }
  });
});

describe('redirects', () => {
  test('a redirect is answered as it is unless the call asks to follow', async () => {
    const hop = await receiver((res) => res.writeHead(302, { location: '/next' }).end());
    const result = await call(`${hop.origin}/`, { allow: allowList('127.0.0.1/32') });
    expect(result).toMatchObject({ kind: 'answered', status: 302, redirects: 0 });
    expect(hop.hits).toHaveLength(1);
  });

  test('a redirect to a private address is refused at the hop', async () => {
    const inside = await receiver(ok);
    const hop = await receiver((res) =>
      res.writeHead(302, { location: `${inside.origin}/secret` }).end(),
    );
    const result = await call(`${hop.origin}/`, {
      allow: allowList(`127.0.0.1:${hop.port}`),
      maxRedirects: 3,
    });
    expect(result).toMatchObject({ kind: 'refused', address: '127.0.0.1', redirects: 1 });
    expect(inside.hits).toHaveLength(0);
  });

  test('a redirect to a name resolving to a metadata address is refused', async () => {
    const hop = await receiver((res) =>
      res.writeHead(307, { location: 'http://cdn.example/file' }).end(),
    );
    const result = await call(`${hop.origin}/`, {
      allow: allowList(`127.0.0.1:${hop.port}`),
      maxRedirects: 3,
      resolve: resolverTo('169.254.169.254'),
    });
    expect(result).toMatchObject({ kind: 'refused', host: 'cdn.example', allowable: false });
  });

  test('a redirect to another port drops the bearer and named credentials; other headers go on', async () => {
    const other = await receiver(ok);
    const hop = await receiver((res) =>
      res.writeHead(302, { location: `${other.origin}/file` }).end(),
    );
    const result = await call(`${hop.origin}/`, {
      allow: allowList(`127.0.0.1:${hop.port},127.0.0.1:${other.port}`),
      maxRedirects: 3,
      headers: {
        Authorization: 'Bearer platform-token',
        'X-Api-Key': 'key-1',
        Cookie: 'session=1',
        Accept: 'text/plain',
      },
      credentialHeaders: ['x-api-key'],
    });
    expect(result).toMatchObject({ kind: 'answered', status: 200, redirects: 1 });
    expect(hop.hits[0]?.headers).toMatchObject({
      authorization: 'Bearer platform-token',
      'x-api-key': 'key-1',
      cookie: 'session=1',
    });
    const seen = other.hits[0]?.headers ?? {};
    expect(seen.authorization).toBeUndefined();
    expect(seen['x-api-key']).toBeUndefined();
    expect(seen.cookie).toBeUndefined();
    expect(seen.accept).toBe('text/plain');
  });

  test('a redirect back to the first origin after leaving it does not get the bearer back', async () => {
    const back = { origin: '' };
    const away = await receiver((res) =>
      res.writeHead(302, { location: `${back.origin}/back` }).end(),
    );
    const first = await receiver((res, hit) =>
      hit.path === '/back' ? ok(res, hit) : res.writeHead(302, { location: away.origin }).end(),
    );
    back.origin = first.origin;
    const result = await call(`${first.origin}/`, {
      allow: allowList('127.0.0.1/32'),
      maxRedirects: 3,
      headers: { authorization: 'Bearer t' },
    });
    expect(result).toMatchObject({ kind: 'answered', redirects: 2 });
    expect(first.hits.map((h) => h.headers.authorization)).toEqual(['Bearer t', undefined]);
  });

  test('a redirect within the origin keeps the bearer', async () => {
    const same = await receiver((res, hit) =>
      hit.path === '/final' ? ok(res, hit) : res.writeHead(301, { location: '/final' }).end(),
    );
    const result = await call(`${same.origin}/start`, {
      allow: allowList('127.0.0.1/32'),
      maxRedirects: 1,
      headers: { authorization: 'Bearer t' },
    });
    expect(result).toMatchObject({ kind: 'answered', status: 200, redirects: 1 });
    expect(same.hits.map((h) => h.headers.authorization)).toEqual(['Bearer t', 'Bearer t']);
  });

  test('redirects past the hop limit fail', async () => {
    const loop = await receiver((res, hit) =>
      res.writeHead(302, { location: `/n${hit.path.length}` }).end(),
    );
    const result = await call(`${loop.origin}/`, {
      allow: allowList('127.0.0.1/32'),
      maxRedirects: 3,
    });
    expect(result).toEqual({
      kind: 'failed',
      reason: 'redirect_limit',
      message: 'more than 3 redirects',
    });
    expect(loop.hits).toHaveLength(4);
  });

  test('a redirect to another scheme is not followed', async () => {
    const hop = await receiver((res) =>
      res.writeHead(302, { location: 'file:///etc/passwd' }).end(),
    );
    const result = await call(`${hop.origin}/`, {
      allow: allowList('127.0.0.1/32'),
      maxRedirects: 3,
    });
    expect(result).toMatchObject({ kind: 'failed', reason: 'redirect_invalid' });
  });

  test('a 303 after a POST turns into a GET without the body', async () => {
    const hop = await receiver((res, hit) =>
      hit.path === '/done' ? ok(res, hit) : res.writeHead(303, { location: '/done' }).end(),
    );
    await call(`${hop.origin}/form`, {
      allow: allowList('127.0.0.1/32'),
      maxRedirects: 1,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(hop.hits.map((h) => [h.method, h.body, h.headers['content-type']])).toEqual([
      ['POST', '{"a":1}', 'application/json'],
      ['GET', '', undefined],
    ]);
  });
});

describe('bounds', () => {
  const loopback = () => allowList('127.0.0.1/32');

  test('a declared length over the cap is too_large before the body is read', async () => {
    const big = await receiver((res) =>
      res.writeHead(200, { 'content-length': 5000 }).end(Buffer.alloc(5000)),
    );
    const result = await call(`${big.origin}/`, { allow: loopback(), maxBytes: 1000 });
    expect(result).toMatchObject({ kind: 'too_large', status: 200, declared: 5000 });
  });

  test('a streamed body past the cap is cut off and too_large', async () => {
    let closed!: () => void;
    const cut = new Promise<void>((resolve) => (closed = resolve));
    const endless = await receiver((res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024);
      // Writes until the client goes away: only a cut connection ends it.
      const pump = () => {
        while (res.write(chunk));
      };
      res.on('drain', pump);
      res.on('close', closed);
      pump();
    });
    const result = await call(`${endless.origin}/`, { allow: loopback(), maxBytes: 100_000 });
    expect(result).toMatchObject({ kind: 'too_large', status: 200, declared: null });
    await cut;
  });

  test('a server that never answers fails on the step timeout', async () => {
    const silent = await receiver(() => {});
    const started = Date.now();
    const result = await call(`${silent.origin}/`, {
      allow: loopback(),
      stepTimeoutMs: 200,
      timeoutMs: 10_000,
    });
    expect(result).toEqual({
      kind: 'failed',
      reason: 'timeout',
      message: 'no answer within 200 ms',
    });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('a body trickling in under the step timeout still ends at the total timeout', async () => {
    const trickle = await receiver((res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('.'), 20);
      res.on('close', () => clearInterval(timer));
    });
    const result = await call(`${trickle.origin}/`, {
      allow: loopback(),
      stepTimeoutMs: 1000,
      timeoutMs: 300,
    });
    expect(result).toEqual({
      kind: 'failed',
      reason: 'timeout',
      message: 'no answer within 300 ms',
    });
  });

  test("the caller's signal cancels the call", async () => {
    const silent = await receiver(() => {});
    const controller = new AbortController();
    const pending = call(`${silent.origin}/`, { allow: loopback(), signal: controller.signal });
    await new Promise<void>((resolve) => {
      const wait = () => (silent.hits.length > 0 ? resolve() : setImmediate(wait));
      wait();
    });
    controller.abort();
    expect(await pending).toMatchObject({ kind: 'failed', reason: 'aborted' });
  });

  test('a failure names no URL path, query or header value', async () => {
    const closed = await receiver(ok);
    closed.server.closeAllConnections();
    await new Promise((resolve) => closed.server.close(resolve));
    const result = await call(`${closed.origin}/secret?token=abc`, {
      allow: loopback(),
      headers: { authorization: 'Bearer hidden' },
    });
    expect(result).toMatchObject({ kind: 'failed', reason: 'connect' });
    const text = JSON.stringify(result);
    expect(text).not.toContain('secret');
    expect(text).not.toContain('token');
    expect(text).not.toContain('hidden');
  });
});

describe('fetchOutbound, the SDK function', () => {
  test('judges under SVC_OUTBOUND_ALLOWED_HOSTS, not the webhook list', async () => {
    const target = await receiver(ok);
    const webhooksOnly = loadConfig({ SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' }).config;
    expect(await fetchOutbound(webhooksOnly, { url: `${target.origin}/` })).toMatchObject({
      kind: 'refused',
      setting: 'SVC_OUTBOUND_ALLOWED_HOSTS',
    });
    const outbound = loadConfig({ SVC_OUTBOUND_ALLOWED_HOSTS: '127.0.0.1/32' }).config;
    expect(await fetchOutbound(outbound, { url: `${target.origin}/` })).toMatchObject({
      kind: 'answered',
      status: 200,
    });
  });

  test("an operator-set SVC_CHAT_GRAPH_URL's host and port count as listed, no other port", async () => {
    const platform = await receiver(ok);
    const other = await receiver(ok);
    const { config } = loadConfig({ SVC_CHAT_GRAPH_URL: `${platform.origin}/v23.0` });
    expect(await fetchOutbound(config, { url: `${platform.origin}/v23.0/1` })).toMatchObject({
      kind: 'answered',
    });
    expect(await fetchOutbound(config, { url: `${other.origin}/` })).toMatchObject({
      kind: 'refused',
    });
  });

  test('an operator-set SVC_CHAT_GRAPH_URL never opens a metadata address', async () => {
    const { config } = loadConfig({ SVC_CHAT_GRAPH_URL: 'http://169.254.169.254/v23.0' });
    expect(
      await fetchOutbound(config, { url: 'http://169.254.169.254/v23.0/latest' }),
    ).toMatchObject({ kind: 'refused', allowable: false });
  });
});

describe('the webhook sender on the shared request', () => {
  const loopback = () => allowList('127.0.0.1/32');
  /** Answers 200 with a declared body it breaks off halfway. */
  const cutShort: Handler = (res) => {
    res.writeHead(200, { 'content-length': 1000 });
    res.write(Buffer.alloc(10), () => res.destroy());
  };

  test('a body cut short fails a plain request, naming the status it had', async () => {
    const broken = await receiver(cutShort);
    expect(await call(`${broken.origin}/`, { allow: loopback() })).toEqual({
      kind: 'failed',
      reason: 'connect',
      message: 'the answer was cut short',
      status: 200,
    });
  });

  test('a receiver that answered 2xx and broke off its body still answered', async () => {
    const broken = await receiver(cutShort);
    const outcome = await sendOnce({
      url: `${broken.origin}/hook`,
      body: Buffer.from('{}'),
      headers: {},
      allow: loopback(),
    });
    expect(outcome).toEqual({ kind: 'answered', status: 200 });
  });

  test('a 3xx is the answer: the delivery never follows it', async () => {
    const target = await receiver(ok);
    const hop = await receiver((res) => res.writeHead(307, { location: target.origin }).end());
    const outcome = await sendOnce({
      url: `${hop.origin}/hook`,
      body: Buffer.from('{}'),
      headers: {},
      allow: loopback(),
    });
    expect(outcome).toEqual({ kind: 'answered', status: 307 });
    expect(target.hits).toHaveLength(0);
    expect(hop.hits[0]).toMatchObject({ method: 'POST', body: '{}' });
  });

  test('a long answer body is not read past its cap; the status counts', async () => {
    const chatty = await receiver((res) =>
      res.writeHead(200, { 'content-length': 10_000_000 }).end(Buffer.alloc(10_000_000)),
    );
    const outcome = await sendOnce({
      url: `${chatty.origin}/hook`,
      body: Buffer.from('{}'),
      headers: {},
      allow: loopback(),
    });
    expect(outcome).toEqual({ kind: 'answered', status: 200 });
  });
});

describe('kept-alive connections (keepAlive, as webhook deliveries ask)', () => {
  const loopback = () => allowList('127.0.0.1/32');
  /**
   * A loopback server counting its connections; `onRequest` gets each request's number on
   * its connection (1 for the first) and answers it.
   */
  async function counting(
    onRequest: (nth: number, req: IncomingMessage, res: ServerResponse) => void,
  ): Promise<{ origin: string; port: number; connections: () => number; requests: () => number }> {
    let connections = 0;
    let requests = 0;
    const perSocket = new WeakMap<object, number>();
    const server = createServer((req, res) => {
      requests += 1;
      const nth = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, nth);
      req.resume();
      req.on('end', () => onRequest(nth, req, res));
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    receivers.push({ server, port, origin: `http://127.0.0.1:${port}`, hits: [] });
    return {
      origin: `http://127.0.0.1:${port}`,
      port,
      connections: () => connections,
      requests: () => requests,
    };
  }

  test('requests in turn to one origin share one connection, each name looked up and judged anew', async () => {
    const target = await counting((_nth, _req, res) => res.writeHead(200).end('ok'));
    const resolve = resolverTo('127.0.0.1');
    for (let i = 0; i < 5; i += 1) {
      const outcome = await sendOnce({
        url: `http://hooks.example:${target.port}/hook`,
        body: Buffer.from('{}'),
        headers: {},
        allow: loopback(),
        resolve,
        keepAlive: true,
      });
      expect(outcome).toEqual({ kind: 'answered', status: 200 });
    }
    expect(target.requests()).toBe(5);
    expect(target.connections()).toBe(1);
    expect(resolve.calls).toEqual(Array(5).fill('hooks.example'));
    // The name now resolves to an address the list does not open: refused, the kept
    // connection notwithstanding.
    const refused = await sendOnce({
      url: `http://hooks.example:${target.port}/hook`,
      body: Buffer.from('{}'),
      headers: {},
      allow: loopback(),
      resolve: resolverTo('10.0.0.7'),
      keepAlive: true,
    });
    expect(refused).toMatchObject({ kind: 'refused', address: '10.0.0.7' });
    expect(target.requests()).toBe(5);
  });

  test('a kept connection the receiver resets before answering is sent again once, on a new one', async () => {
    // The second request on any connection is reset unanswered, as a server closing an
    // idle connection just as the request arrives would.
    const target = await counting((nth, req, res) => {
      if (nth === 2) req.socket.resetAndDestroy();
      else res.writeHead(200).end('ok');
    });
    const send = () =>
      sendOnce({
        url: `${target.origin}/hook`,
        body: Buffer.from('{}'),
        headers: {},
        allow: loopback(),
        keepAlive: true,
      });
    expect(await send()).toEqual({ kind: 'answered', status: 200 });
    expect(await send()).toEqual({ kind: 'answered', status: 200 });
    expect(target.requests()).toBe(3);
    expect(target.connections()).toBe(2);
  });

  test('without keepAlive every request has a connection of its own', async () => {
    const target = await counting((_nth, _req, res) => res.writeHead(200).end('ok'));
    for (let i = 0; i < 3; i += 1) {
      await sendOnce({
        url: `${target.origin}/hook`,
        body: Buffer.from('{}'),
        headers: {},
        allow: loopback(),
      });
    }
    expect(target.requests()).toBe(3);
    expect(target.connections()).toBe(3);
  });
});
