import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { getIntrospectionQuery } from 'graphql';
import { answerTooLargeBody } from '../../src/http/guards/answer-cap.js';
import { COMPRESS_MIN_BYTES } from '../../src/http/compression.js';
import { CORE_EVENT } from '../events/sse.js';
import { decoded, rawGraph, rawHttp, type RawHttpAnswer } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';

const ORIGIN = 'https://app.example.com';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ env: { SVC_CORS_ORIGINS: ORIGIN }, listen: true });
});

afterAll(() => svc.stop());

/** The fields an answer's Vary names (CORS names Origin on every answer here). */
function varies(answer: RawHttpAnswer): string[] {
  return (answer.headers.vary ?? '').split(',').map((name) => name.trim());
}

/** A signed-in answer well over the threshold: the whole schema. */
const LARGE = { query: getIntrospectionQuery({ schemaDescription: true }) };

describe('a large graph answer', () => {
  test('comes plain without Accept-Encoding, saying it varies with it', async () => {
    const answer = await rawGraph(svc.url, LARGE, svc.adminHeaders);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(varies(answer)).toContain('Accept-Encoding');
    expect(answer.body.length).toBeGreaterThan(COMPRESS_MIN_BYTES);
    expect(answer.headers['content-length']).toBe(String(answer.body.length));
  });

  test.each(['br', 'gzip'])(
    'with Accept-Encoding %s comes compressed, smaller, and decodes to the same answer',
    async (encoding) => {
      const plain = await rawGraph(svc.url, LARGE, svc.adminHeaders);
      const answer = await rawGraph(svc.url, LARGE, {
        ...svc.adminHeaders,
        'accept-encoding': encoding,
      });
      expect(answer.headers['content-encoding']).toBe(encoding);
      expect(varies(answer)).toContain('Accept-Encoding');
      expect(answer.headers['content-length']).toBe(String(answer.body.length));
      expect(answer.body.length).toBeLessThan(plain.body.length / 3);
      expect(JSON.parse(decoded(answer).toString('utf8'))).toEqual(
        JSON.parse(plain.body.toString('utf8')),
      );
    },
  );

  test('keeps the Vary that CORS set for a listed origin', async () => {
    const answer = await rawGraph(svc.url, LARGE, {
      ...svc.adminHeaders,
      origin: ORIGIN,
      'accept-encoding': 'gzip',
    });
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(answer.headers.vary).toBe('Origin, Accept-Encoding');
    expect(answer.headers['access-control-allow-origin']).toBe(ORIGIN);
  });
});

describe('a small graph answer', () => {
  test('comes plain even when the client accepts a coding, and does not vary', async () => {
    const answer = await rawGraph(
      svc.url,
      { query: '{ version }' },
      { ...svc.adminHeaders, 'accept-encoding': 'gzip, deflate, br' },
    );
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(varies(answer)).not.toContain('Accept-Encoding');
    expect(JSON.parse(answer.body.toString('utf8'))).toEqual({
      data: { version: expect.any(String) },
    });
  });
});

test('an event stream is never compressed', async () => {
  const url = `${svc.url}/api/graphql?query=${encodeURIComponent(CORE_EVENT)}`;
  const answer = await rawHttp(url, {
    headers: { ...svc.adminHeaders, accept: 'text/event-stream', 'accept-encoding': 'br, gzip' },
    headOnly: true,
  });
  expect(answer.status).toBe(200);
  expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
  // Yoga names `none` on its streams so that proxies leave them as they are.
  expect(answer.headers['content-encoding'] ?? 'none').toBe('none');
});

test('the anonymous answer cap judges the answer before compression', async () => {
  // Over SVC_GRAPH_ANONYMOUS_ANSWER_MAX_BYTES as written, a few hundred bytes compressed:
  // graphql-js names the refused value in its message.
  const answer = await rawGraph(
    svc.url,
    {
      query: 'query ($n: Boolean!) { __typename @include(if: $n) }',
      variables: { n: 'x'.repeat(12_000) },
    },
    { 'accept-encoding': 'gzip' },
  );
  expect(JSON.parse(decoded(answer).toString('utf8'))).toEqual(answerTooLargeBody());
});
