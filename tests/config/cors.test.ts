import { describe, expect, test } from '@jest/globals';
import { parseCorsOrigin, parseCorsOrigins } from '../../src/config/cors.js';

describe('parseCorsOrigin', () => {
  test.each([
    ['https://app.example.com', 'https://app.example.com'],
    ['https://app.example.com/', 'https://app.example.com'],
    ['HTTPS://App.Example.COM:443', 'https://app.example.com'],
    ['http://localhost:5173', 'http://localhost:5173'],
    ['http://localhost:80/', 'http://localhost'],
    ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
    ['http://[0:0::1]:3000', 'http://[::1]:3000'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
  ])('accepts %j as the origin a browser sends, %j', (text, value) => {
    expect(parseCorsOrigin(text)).toEqual({ ok: true, value });
  });

  test.each(['*', 'https://*.example.com', '*.example.com'])(
    'refuses %j, since the session cookie is credentialed',
    (text) => {
      expect(parseCorsOrigin(text)).toEqual({
        ok: false,
        refusals: [
          { message: 'must list exact origins; * is refused because the session cookie is sent' },
        ],
      });
    },
  );

  test.each(['null', 'NULL'])('refuses %j, the origin of any sandboxed page', (text) => {
    expect(parseCorsOrigin(text)).toEqual({
      ok: false,
      refusals: [
        {
          message: 'must list http or https origins; null is refused (any sandboxed page sends it)',
        },
      ],
    });
  });

  test.each([
    'https://app.example.com/app',
    'https://app.example.com/?a=1',
    'https://app.example.com?',
    'https://app.example.com#top',
    'https://user:pass@app.example.com',
    'https://user@app.example.com',
  ])('refuses %j, which is more than an origin', (text) => {
    expect(parseCorsOrigin(text)).toEqual({
      ok: false,
      refusals: [{ message: 'must list origins with no path, query, fragment or user name' }],
    });
  });

  test.each(['app.example.com', 'ftp://app.example.com', 'file:///tmp/app', 'https://', ''])(
    'refuses %j, which is no http or https origin',
    (text) => {
      expect(parseCorsOrigin(text)).toEqual({
        ok: false,
        refusals: [{ message: 'must list http or https origins such as https://app.example.com' }],
      });
    },
  );
});

describe('parseCorsOrigins', () => {
  test('reads a comma-separated list with spaces, skipping empty entries', () => {
    expect(parseCorsOrigins(' https://a.example , http://localhost:5173,, ')).toEqual({
      ok: true,
      value: ['https://a.example', 'http://localhost:5173'],
    });
  });

  test('keeps an origin listed twice, in any spelling, once', () => {
    expect(parseCorsOrigins('https://a.example, HTTPS://A.example:443/')).toEqual({
      ok: true,
      value: ['https://a.example'],
    });
  });

  test('names each refused entry by itself', () => {
    expect(parseCorsOrigins('https://a.example, *, https://b.example/x')).toEqual({
      ok: false,
      refusals: [
        {
          got: '*',
          message: 'must list exact origins; * is refused because the session cookie is sent',
        },
        {
          got: 'https://b.example/x',
          message: 'must list origins with no path, query, fragment or user name',
        },
      ],
    });
  });
});
