import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fixturePluginsDir } from '../support/env.js';
import { startTestService, type TestService } from '../support/service.js';

interface Conversation {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves once `pattern` shows in what the server sent. */
  waitFor(pattern: RegExp): Promise<void>;
  /** Resolves, with the time, when the server closes the connection. */
  closed: Promise<number>;
}

/** A raw TCP connection to the service, for clients too slow for any HTTP library. */
async function open(url: string): Promise<Conversation> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let text = '';
  const waiters = new Set<() => void>();
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
    for (const waiter of waiters) waiter();
  });
  const closed = new Promise<number>((resolve) => {
    socket.once('close', () => resolve(performance.now()));
  });
  // A reset after a 408 is still the server closing the connection.
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    received: () => text,
    closed,
    waitFor(pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(text)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
        void closed.then(() => {
          if (waiters.delete(check)) reject(new Error(`closed before ${pattern}: ${text}`));
        });
      });
    },
  };
}

function graphPost(svc: TestService, query: string): { head: string; body: string } {
  const body = JSON.stringify({ query });
  const head =
    'POST /api/graphql HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n' +
    `authorization: Bearer ${svc.adminToken}\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  return { head, body };
}

describe('SVC_HTTP_READ_HEADER_TIMEOUT', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService({
      listen: true,
      env: { SVC_HTTP_READ_HEADER_TIMEOUT: '200ms', SVC_HTTP_READ_TIMEOUT: '20s' },
      plugins: { dir: fixturePluginsDir },
    });
  });

  afterAll(() => svc.stop());

  test('a client that sends part of a request line and stalls is answered 408 and disconnected', async () => {
    const client = await open(svc.url);
    const sent = performance.now();
    client.socket.write('GET /api/heal');
    const closedAfter = (await client.closed) - sent;
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfter).toBeGreaterThanOrEqual(150);
    expect(closedAfter).toBeLessThan(2000);
  });

  test('a client that connects and never sends a byte is disconnected as well', async () => {
    const client = await open(svc.url);
    const connected = performance.now();
    const closedAfter = (await client.closed) - connected;
    expect(closedAfter).toBeGreaterThanOrEqual(150);
    expect(closedAfter).toBeLessThan(2000);
  });

  test('a request whose headers arrived in time may take longer than that to be answered', async () => {
    const client = await open(svc.url);
    const { head, body } = graphPost(svc, '{ probeWait(ms: 600) }');
    client.socket.write(head + body);
    await client.waitFor(/waited 600/);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    client.socket.destroy();
  });
});

describe('SVC_HTTP_READ_TIMEOUT', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService({
      listen: true,
      env: { SVC_HTTP_READ_HEADER_TIMEOUT: '200ms', SVC_HTTP_READ_TIMEOUT: '300ms' },
      plugins: { dir: fixturePluginsDir },
    });
  });

  afterAll(() => svc.stop());

  test('a request whose body arrives too slowly is cut off with 408', async () => {
    const client = await open(svc.url);
    const { head, body } = graphPost(svc, '{ version }');
    const sent = performance.now();
    client.socket.write(head + body.slice(0, 5));
    const closedAfter = (await client.closed) - sent;
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfter).toBeGreaterThanOrEqual(250);
    expect(closedAfter).toBeLessThan(2500);
  });

  test('a request cut off by the read timeout is logged as the client going away, not as a failure', async () => {
    const client = await open(svc.url);
    const { head, body } = graphPost(svc, '{ version }');
    client.socket.write(head + body.slice(0, 5));
    await client.closed;
    // One more round trip: the server has long handled the connection it closed itself.
    expect((await fetch(`${svc.url}/api/healthz`)).status).toBe(200);
    expect(svc.lines.filter((line) => line.level === 'error')).toEqual([]);
    expect(svc.lines).toContainEqual(
      expect.objectContaining({
        level: 'info',
        path: '/api/graphql',
        msg: 'client went away before sending the whole request',
      }),
    );
  });

  test('a request received in time may take longer than the read timeout to be answered', async () => {
    const client = await open(svc.url);
    const { head, body } = graphPost(svc, '{ probeWait(ms: 700) }');
    client.socket.write(head + body);
    await client.waitFor(/waited 700/);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    client.socket.destroy();
  });
});

describe('SVC_HTTP_IDLE_TIMEOUT', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService({ env: { SVC_HTTP_IDLE_TIMEOUT: '300ms' }, listen: true });
  });

  afterAll(() => svc.stop());

  test('a keep-alive connection left idle is closed by the server', async () => {
    const client = await open(svc.url);
    client.socket.write('GET /api/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await client.waitFor(/\{"status":"ok"\}/);
    const answered = performance.now();
    expect(client.received()).toMatch(/connection: keep-alive/i);
    const closedAfter = (await client.closed) - answered;
    // Node waits a second past the advertised idle timeout before it closes.
    expect(closedAfter).toBeGreaterThanOrEqual(250);
    expect(closedAfter).toBeLessThan(2500);
  });
});
