import { describe, expect, test } from '@jest/globals';
import { corsHeaders, isListedOrigin } from '../../../src/http/guards/cors.js';

const LISTED = ['https://app.example', 'http://localhost:5173'];

describe('isListedOrigin', () => {
  test.each<[string | undefined, boolean]>([
    ['https://app.example', true],
    ['http://localhost:5173', true],
    ['https://evil.example', false],
    ['https://app.example.evil.example', false],
    ['http://app.example', false],
    ['https://app.example:8443', false],
    ['https://APP.example', false],
    ['null', false],
    ['', false],
    [undefined, false],
  ])('%j is listed: %s', (origin, listed) => {
    expect(isListedOrigin(origin, LISTED)).toBe(listed);
  });
});

describe('corsHeaders', () => {
  test('adds nothing at all while no origin is listed', () => {
    expect(corsHeaders('POST', { origin: 'https://evil.example' }, [])).toEqual({});
    expect(corsHeaders('OPTIONS', { origin: 'https://evil.example' }, [])).toEqual({});
  });

  test('names back a listed origin with credentials and exposes Retry-After', () => {
    expect(corsHeaders('POST', { origin: 'https://app.example' }, LISTED)).toEqual({
      vary: 'Origin',
      'access-control-allow-origin': 'https://app.example',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'Retry-After',
    });
  });

  test('answers an unlisted origin with Vary alone, once any origin is listed', () => {
    expect(corsHeaders('GET', { origin: 'https://evil.example' }, LISTED)).toEqual({
      vary: 'Origin',
    });
  });

  test('answers a request without Origin with Vary alone, once any origin is listed', () => {
    expect(corsHeaders('POST', {}, LISTED)).toEqual({ vary: 'Origin' });
  });

  test('answers a listed preflight with methods, the headers asked for and a max age', () => {
    const headers = {
      origin: 'http://localhost:5173',
      'access-control-request-headers': 'content-type, authorization',
    };
    expect(corsHeaders('OPTIONS', headers, LISTED)).toEqual({
      vary: 'Origin, Access-Control-Request-Headers',
      'access-control-allow-origin': 'http://localhost:5173',
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'GET, POST, PUT, DELETE',
      'access-control-allow-headers': 'content-type, authorization',
      'access-control-max-age': '600',
    });
  });

  test('names no allowed headers on a preflight that asks for none', () => {
    const answer = corsHeaders('OPTIONS', { origin: 'https://app.example' }, LISTED);
    expect(answer).not.toHaveProperty('access-control-allow-headers');
    expect(answer['access-control-allow-methods']).toBe('GET, POST, PUT, DELETE');
  });

  test('gives an unlisted preflight nothing but Vary', () => {
    const headers = {
      origin: 'https://evil.example',
      'access-control-request-headers': 'content-type',
    };
    expect(corsHeaders('OPTIONS', headers, LISTED)).toEqual({ vary: 'Origin' });
  });
});
