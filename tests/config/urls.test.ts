import { describe, expect, test } from '@jest/globals';
import { parseBaseUrl, parsePublicUrl } from '../../src/config/urls.js';

describe('parsePublicUrl', () => {
  test.each([
    ['https://crm.example.com', 'https://crm.example.com'],
    ['https://crm.example.com/', 'https://crm.example.com'],
    ['http://localhost:8080', 'http://localhost:8080'],
    ['HTTPS://CRM.Example.com:443/', 'https://crm.example.com'],
    ['http://10.0.0.5:3000/', 'http://10.0.0.5:3000'],
  ])('accepts %j as %j', (text, value) => {
    expect(parsePublicUrl(text)).toEqual({ ok: true, value });
  });

  test.each([
    'https://crm.example.com/app',
    'https://crm.example.com//',
    'https://crm.example.com/?a=1',
    'https://crm.example.com?',
    'https://crm.example.com#top',
    'https://crm.example.com/#',
    'https://user:pass@crm.example.com',
    'https://user@crm.example.com',
  ])('refuses %j, which is more than a site root', (text) => {
    expect(parsePublicUrl(text)).toEqual({
      ok: false,
      refusals: [{ message: 'must be a site root with no path, query, fragment or user name' }],
    });
  });

  test.each(['ftp://crm.example.com', 'crm.example.com', 'mailto:crm@example.com', '', 'https://'])(
    'refuses %j, which is no http or https address',
    (text) => {
      expect(JSON.stringify(parsePublicUrl(text))).toContain('must be an http or https address');
    },
  );
});

describe('parseBaseUrl', () => {
  test.each([
    ['https://graph.facebook.com/v23.0', 'https://graph.facebook.com/v23.0'],
    ['https://graph.facebook.com/v23.0/', 'https://graph.facebook.com/v23.0'],
    ['http://localhost:9000', 'http://localhost:9000'],
    ['http://localhost:9000/', 'http://localhost:9000'],
  ])('accepts %j as %j', (text, value) => {
    expect(parseBaseUrl(text)).toEqual({ ok: true, value });
  });

  test.each([
    'ftp://graph.example.com',
    'graph.facebook.com',
    'https://x.com/v1?a=b',
    'https://x.com/#a',
  ])('refuses %j', (text) => {
    expect(parseBaseUrl(text).ok).toBe(false);
  });
});
