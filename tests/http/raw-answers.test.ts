// Answers as strict HTTP clients read them (RFC 9110, RFC 9112): each header name once, no
// Content-Length on a 204 or 304, and one that is right on every finite answer.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CORE_EVENT } from '../events/sse.js';
import { startTestService, type TestService } from '../support/service.js';

const BODY_MAX_BYTES = 2048;

let root: string;
let svc: TestService;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'svc-raw-'));
  await mkdir(path.join(root, 'assets'));
  await writeFile(path.join(root, 'index.html'), '<!doctype html><title>svc</title>');
  await writeFile(path.join(root, 'assets', 'app.js'), 'console.log("hello");');
  svc = await startTestService({
    listen: true,
    env: { SVC_WEB_DIR: root, SVC_GRAPH_BODY_MAX_BYTES: String(BODY_MAX_BYTES) },
  });
});

afterAll(async () => {
  await svc.stop();
  await rm(root, { recursive: true, force: true });
});

interface RawAnswer {
  status: number;
  /** Every header line of the answer's head, in order, names as sent. */
  fields: { name: string; value: string }[];
  /** The content, read up to the declared Content-Length (none: what came with the head). */
  body: Buffer;
}

function parseHead(head: string): Omit<RawAnswer, 'body'> {
  const [statusLine = '', ...lines] = head.split('\r\n');
  const fields = lines.map((line) => {
    const colon = line.indexOf(':');
    return { name: line.slice(0, colon), value: line.slice(colon + 1).trim() };
  });
  return { status: Number(statusLine.split(' ')[1]), fields };
}

function valuesOf(answer: RawAnswer, name: string): string[] {
  return answer.fields.filter((f) => f.name.toLowerCase() === name).map((f) => f.value);
}

/** Names sent more than once, compared case-insensitively; Set-Cookie may repeat (RFC 9110 5.3). */
function repeatedNames(answer: RawAnswer): string[] {
  const names = answer.fields.map((f) => f.name.toLowerCase()).filter((n) => n !== 'set-cookie');
  return [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
}

/**
 * Sends `request` as written on a fresh connection and reads the answer's head, then as many
 * bytes as its Content-Length declares. A stream's head is read without waiting for its end.
 */
function exchange(request: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(svc.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let received = Buffer.alloc(0);
    let head: Omit<RawAnswer, 'body'> | null = null;
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (!head) {
        const end = received.indexOf('\r\n\r\n');
        if (end === -1) return;
        head = parseHead(received.subarray(0, end).toString('latin1'));
        received = received.subarray(end + 4);
      }
      const declared = valuesOf({ ...head, body: received }, 'content-length')[0];
      if (received.length < Number(declared ?? 0)) return;
      socket.destroy();
      resolve({ ...head, body: received });
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('the connection closed before the answer')));
    socket.write(request);
  });
}

/** An HTTP/1.1 request head with `fields` (and `body`, whose length is declared for it). */
function requestText(
  line: string,
  fields: Record<string, string>,
  body: string | null = null,
): string {
  const host = new URL(svc.url).host;
  const all = {
    host,
    ...fields,
    ...(body === null ? {} : { 'content-length': String(body.length) }),
  };
  const head = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${line}\r\n${head.join('')}\r\n${body ?? ''}`;
}

function preflight(): string {
  return requestText('OPTIONS /api/graphql HTTP/1.1', {
    origin: svc.url,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type',
  });
}

describe('OPTIONS /api/graphql', () => {
  test('answers 204 with no Content-Length and no header name twice', async () => {
    const answer = await exchange(preflight());
    expect(answer.status).toBe(204);
    expect(repeatedNames(answer)).toEqual([]);
    expect(valuesOf(answer, 'content-length')).toEqual([]);
    expect(valuesOf(answer, 'transfer-encoding')).toEqual([]);
  });

  test('is accepted by Node’s own fetch', async () => {
    const response = await fetch(`${svc.url}/api/graphql`, {
      method: 'OPTIONS',
      headers: { origin: svc.url, 'access-control-request-method': 'POST' },
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
  });
});

test('a 304 from the frontend directory has no Content-Length and no header name twice', async () => {
  const first = await fetch(`${svc.url}/assets/app.js`);
  await first.arrayBuffer();
  const etag = first.headers.get('etag');
  expect(etag).not.toBeNull();
  const answer = await exchange(
    requestText('GET /assets/app.js HTTP/1.1', { 'if-none-match': etag ?? '' }),
  );
  expect(answer.status).toBe(304);
  expect(repeatedNames(answer)).toEqual([]);
  expect(valuesOf(answer, 'content-length')).toEqual([]);
});

test('a 413 for a signed-in caller’s over-size body carries one Content-Length that fits its body', async () => {
  // Declared and never sent: the route refuses on the declared length alone.
  const answer = await exchange(
    requestText('POST /api/graphql HTTP/1.1', {
      ...svc.adminHeaders,
      'content-type': 'application/json',
      'content-length': String(BODY_MAX_BYTES + 1),
    }),
  );
  expect(answer.status).toBe(413);
  expect(repeatedNames(answer)).toEqual([]);
  expect(valuesOf(answer, 'content-length')).toEqual([String(answer.body.length)]);
  const body = JSON.parse(answer.body.toString('utf8')) as {
    errors: { extensions: { reason: string } }[];
  };
  expect(body.errors[0]?.extensions.reason).toBe('body_too_large');
});

test('a JSON graph answer carries one Content-Length that fits its body', async () => {
  const answer = await exchange(
    requestText(
      'POST /api/graphql HTTP/1.1',
      { ...svc.adminHeaders, 'content-type': 'application/json' },
      JSON.stringify({ query: '{ version }' }),
    ),
  );
  expect(answer.status).toBe(200);
  expect(repeatedNames(answer)).toEqual([]);
  expect(valuesOf(answer, 'content-length')).toEqual([String(answer.body.length)]);
  expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ data: { version: '0.9.0' } });
});

test('a streamed coreEvent answer has no Content-Length and no header name twice', async () => {
  const answer = await exchange(
    requestText(
      'POST /api/graphql HTTP/1.1',
      {
        ...svc.adminHeaders,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      JSON.stringify({ query: CORE_EVENT }),
    ),
  );
  expect(answer.status).toBe(200);
  expect(valuesOf(answer, 'content-type')[0]).toMatch(/^text\/event-stream/);
  expect(repeatedNames(answer)).toEqual([]);
  expect(valuesOf(answer, 'content-length')).toEqual([]);
  expect(valuesOf(answer, 'transfer-encoding')).toEqual(['chunked']);
});
