// A plugin route's attachment of no declared length (the importer's export) is piped as it
// is produced: the client holds the first chunk before the route has made the second.
// Before, the bridge read such a body whole before sending anything.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendWebResponse } from '../../src/http/node-fetch-bridge.js';

let server: Server;
let url: string;
let firstChunkSeen: () => void;
const seen = new Promise<void>((resolve) => (firstChunkSeen = resolve));

beforeAll(async () => {
  server = createServer((_req, res) => {
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('first,'));
        // The rest is made only once the client holds the first chunk.
        await seen;
        controller.enqueue(new TextEncoder().encode('second'));
        controller.close();
      },
    });
    const response = new Response(body, {
      headers: {
        'content-type': 'text/csv',
        'content-disposition': 'attachment; filename="x.csv"',
      },
    });
    void sendWebResponse(res, response, { sized: true });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

test('an attachment without a length reaches the client chunk by chunk', async () => {
  const response = await fetch(url);
  expect(response.headers.get('transfer-encoding')).toBe('chunked');
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const first = await reader.read();
  expect(decoder.decode(first.value)).toBe('first,');
  firstChunkSeen();
  let rest = '';
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    rest += decoder.decode(read.value, { stream: true });
  }
  expect(rest).toBe('second');
}, 10_000);
