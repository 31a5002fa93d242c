import { describe, expect, test } from '@jest/globals';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import {
  acceptedEncoding,
  COMPRESS_MIN_BYTES,
  compress,
  createStaticAnswer,
  isCompressible,
  worthCompressing,
} from '../../src/http/compression.js';

describe('acceptedEncoding', () => {
  test.each([
    [undefined, null],
    ['', null],
    ['identity', null],
    ['deflate', null],
    ['gzip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['GZIP;q=1.0, BR;q=1.0', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=0, gzip;q=0.1', 'gzip'],
    ['br;q=0, gzip;q=0', null],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['gzip;q=0, *', 'br'],
  ])('%j chooses %j', (header, chosen) => {
    expect(acceptedEncoding(header)).toBe(chosen);
  });

  test('reads a field sent more than once as one list', () => {
    expect(acceptedEncoding(['br;q=0', 'gzip'])).toBe('gzip');
  });
});

describe('isCompressible', () => {
  test.each([
    'application/json',
    'application/json; charset=utf-8',
    'application/graphql-response+json; charset=utf-8',
    'text/html',
    'text/html; charset=utf-8',
    'text/plain',
    'application/javascript',
    'image/svg+xml',
  ])('%s is compressed', (type) => {
    expect(isCompressible(type)).toBe(true);
  });

  test.each([
    'text/event-stream',
    'text/event-stream; charset=utf-8',
    'multipart/mixed; boundary="-"',
    'image/png',
    'application/octet-stream',
    'application/zip',
    '',
  ])('%j is not', (type) => {
    expect(isCompressible(type)).toBe(false);
  });
});

describe('worthCompressing', () => {
  test('an answer of the threshold’s size goes out plain; one byte more is compressed', () => {
    expect(worthCompressing('application/json', COMPRESS_MIN_BYTES)).toBe(false);
    expect(worthCompressing('application/json', COMPRESS_MIN_BYTES + 1)).toBe(true);
  });

  test('a large event stream is never compressed', () => {
    expect(worthCompressing('text/event-stream', 10 * COMPRESS_MIN_BYTES)).toBe(false);
  });
});

describe('compress', () => {
  const body = Buffer.from(JSON.stringify({ data: { items: Array(2000).fill('same text') } }));

  test('brotli and gzip answers decompress to the body, smaller', async () => {
    const br = await compress(body, 'br');
    const gz = await compress(body, 'gzip');
    expect(br.length).toBeLessThan(body.length);
    expect(gz.length).toBeLessThan(body.length);
    expect(brotliDecompressSync(br).equals(body)).toBe(true);
    expect(gunzipSync(gz).equals(body)).toBe(true);
  });
});

describe('createStaticAnswer', () => {
  const answer = createStaticAnswer('<p>hello</p>'.repeat(5000), 'text/html; charset=utf-8');

  test('keeps the body plain as given', () => {
    expect(answer.plain.toString('utf8')).toBe('<p>hello</p>'.repeat(5000));
    expect(answer.contentType).toBe('text/html; charset=utf-8');
  });

  test('compresses each coding once and hands the same bytes to every request', async () => {
    const [first, concurrent] = await Promise.all([answer.encoded('br'), answer.encoded('br')]);
    const later = await answer.encoded('br');
    expect(concurrent).toBe(first);
    expect(later).toBe(first);
    expect(brotliDecompressSync(first).equals(answer.plain)).toBe(true);
    const gz = await answer.encoded('gzip');
    expect(gz).not.toBe(first);
    expect(gunzipSync(gz).equals(answer.plain)).toBe(true);
  });
});
