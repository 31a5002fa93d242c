// The in-process entry the tests reach the service through (src/http/app.ts
// inProcessFetch): a WHATWG Request in, a WHATWG Response out, no socket, and what a
// client can do over one (send a body, read a stream, go away) seen by the handler as such.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, test } from '@jest/globals';
import { inProcessFetch } from '../../src/http/app.js';

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('inProcessFetch', () => {
  test('hands the handler method, path, headers, body and peer; answers status, headers and body', async () => {
    const fetchIn = inProcessFetch((req, res) => {
      void bodyOf(req).then((body) => {
        res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
        res.setHeader('content-type', 'application/json');
        res.statusCode = 201;
        res.end(
          JSON.stringify({
            method: req.method,
            url: req.url,
            host: req.headers.host,
            type: req.headers['content-type'],
            peer: req.socket.remoteAddress,
            body,
          }),
        );
      });
    });
    const response = await fetchIn(
      new Request('http://127.0.0.1/api/x?y=1', {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'hello',
      }),
    );
    expect(response.status).toBe(201);
    expect(response.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(await response.json()).toEqual({
      method: 'POST',
      url: '/api/x?y=1',
      host: '127.0.0.1',
      type: 'text/plain',
      peer: '127.0.0.1',
      body: 'hello',
    });

    const other = await fetchIn(new Request('http://127.0.0.1:8080/'), {
      remoteAddress: '203.0.113.9',
    });
    expect(await other.json()).toMatchObject({ host: '127.0.0.1:8080', peer: '203.0.113.9' });
  });

  test('a multipart body arrives as the client encoded it', async () => {
    const fetchIn = inProcessFetch((req, res) => {
      void bodyOf(req).then((body) => res.end(`${req.headers['content-type']}\n${body}`));
    });
    const form = new FormData();
    form.append('file', new Blob(['a,b\n1,2\n']), 'x.csv');
    const text = await (
      await fetchIn(new Request('http://127.0.0.1/', { method: 'POST', body: form }))
    ).text();
    const [type, ...body] = text.split('\n');
    expect(type).toMatch(/^multipart\/form-data; boundary=/);
    expect(body.join('\n')).toContain('filename="x.csv"');
    expect(body.join('\n')).toContain('a,b\n1,2\n');
  });

  test('the answer resolves at its head and its body streams as the handler writes', async () => {
    let writeMore!: () => void;
    const fetchIn = inProcessFetch((_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: next\n\n');
      writeMore = () => res.end('event: complete\n\n');
    });
    const response = await fetchIn(new Request('http://127.0.0.1/'));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toBe('event: next\n\n');
    writeMore();
    expect(decoder.decode((await reader.read()).value)).toBe('event: complete\n\n');
    expect((await reader.read()).done).toBe(true);
  });

  test('cancelling an unread body, or aborting the request, closes the response as a client going away', async () => {
    const closed = new Map<string, Promise<boolean>>();
    let onHandled = () => {};
    const fetchIn = inProcessFetch((req, res) => {
      onHandled();
      // Whether the answer was whole when its response closed.
      closed.set(
        req.url ?? '',
        new Promise((resolve) => res.once('close', () => resolve(res.writableEnded))),
      );
      if (req.url === '/head') {
        res.writeHead(200);
        res.write('x'.repeat(64 * 1024));
      }
    });
    const streaming = await fetchIn(new Request('http://127.0.0.1/head'));
    await streaming.body?.cancel();
    expect(await closed.get('/head')).toBe(false);

    const abort = new AbortController();
    const handled = new Promise<void>((resolve) => (onHandled = resolve));
    const waiting = fetchIn(new Request('http://127.0.0.1/never', { signal: abort.signal }));
    await handled;
    abort.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    expect(await closed.get('/never')).toBe(false);

    // Aborted before the handler ran: it never runs, and the request fails the same way.
    const early = new AbortController();
    const before = fetchIn(new Request('http://127.0.0.1/early', { signal: early.signal }));
    early.abort();
    await expect(before).rejects.toMatchObject({ name: 'AbortError' });
    expect(closed.has('/early')).toBe(false);
  });

  test('a HEAD or 204 answer has no body; a handler that hangs up first fails like fetch', async () => {
    const fetchIn = inProcessFetch((req, res) => {
      if (req.url === '/cut') return void res.destroy();
      res.statusCode = req.method === 'HEAD' ? 200 : 204;
      res.end();
    });
    expect((await fetchIn(new Request('http://127.0.0.1/', { method: 'HEAD' }))).body).toBeNull();
    expect((await fetchIn(new Request('http://127.0.0.1/'))).status).toBe(204);
    await expect(fetchIn(new Request('http://127.0.0.1/cut'))).rejects.toThrow('fetch failed');
  });
});
