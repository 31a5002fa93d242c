import { describe, expect, test } from '@jest/globals';
import {
  CROSS_ORIGIN_BODY,
  crossOriginRefusal,
  type CrossOriginHeaders,
} from '../../../src/http/guards/cross-origin.js';

const HOST = 'crm.example';

describe('crossOriginRefusal', () => {
  test.each(['GET', 'HEAD', 'OPTIONS'])('never refuses a %s read', (method) => {
    expect(
      crossOriginRefusal(method, {
        'sec-fetch-site': 'cross-site',
        origin: 'https://evil.example',
        host: HOST,
      }),
    ).toBeNull();
  });

  test.each(['POST', 'PUT', 'PATCH', 'DELETE', 'get'])('checks a %s write', (method) => {
    expect(crossOriginRefusal(method, { 'sec-fetch-site': 'cross-site', host: HOST })).toEqual({
      reason: 'fetch-site',
    });
  });

  test.each(['POST', 'PUT', 'PATCH', 'DELETE'])(
    'lets a %s with neither Sec-Fetch-Site nor Origin pass',
    (method) => {
      expect(crossOriginRefusal(method, { host: HOST })).toBeNull();
    },
  );

  test.each<[string, CrossOriginHeaders, null | { reason: string }]>([
    ['passes same-origin', { 'sec-fetch-site': 'same-origin' }, null],
    ['refuses same-site', { 'sec-fetch-site': 'same-site' }, { reason: 'fetch-site' }],
    ['refuses cross-site', { 'sec-fetch-site': 'cross-site' }, { reason: 'fetch-site' }],
    [
      'refuses none (typed into the address bar)',
      { 'sec-fetch-site': 'none' },
      { reason: 'fetch-site' },
    ],
    ['refuses an empty value', { 'sec-fetch-site': '' }, { reason: 'fetch-site' }],
    ['refuses an unknown value', { 'sec-fetch-site': 'Same-Origin' }, { reason: 'fetch-site' }],
    [
      'refuses cross-site even when the Origin matches the Host',
      { 'sec-fetch-site': 'cross-site', origin: `https://${HOST}`, host: HOST },
      { reason: 'fetch-site' },
    ],
    [
      'passes same-origin even when the Origin differs from the Host',
      { 'sec-fetch-site': 'same-origin', origin: 'https://other.example', host: HOST },
      null,
    ],
  ])('Sec-Fetch-Site %s', (_name, headers, expected) => {
    expect(crossOriginRefusal('POST', { host: HOST, ...headers })).toEqual(expected);
  });

  test.each<[string, string, string | undefined, boolean]>([
    ['an https Origin matching a bare Host', 'https://crm.example', 'crm.example', true],
    ['an http Origin matching a bare Host', 'http://crm.example', 'crm.example', true],
    ['an Origin on another host', 'https://evil.example', 'crm.example', false],
    ['an Origin on a subdomain', 'https://a.crm.example', 'crm.example', false],
    ['hosts differing only in case', 'https://CRM.Example', 'crm.EXAMPLE', true],
    ['matching explicit ports', 'http://crm.example:8080', 'crm.example:8080', true],
    ['different explicit ports', 'http://crm.example:8080', 'crm.example:8081', false],
    ['an Origin port against a bare Host', 'http://crm.example:8080', 'crm.example', false],
    ['a bare Origin against a Host port', 'http://crm.example', 'crm.example:8080', false],
    ['https default port 443 against Host :443', 'https://crm.example', 'crm.example:443', true],
    ['http default port 80 against Host :80', 'http://crm.example', 'crm.example:80', true],
    ['https default port 443 against Host :80', 'https://crm.example', 'crm.example:80', false],
    ['http default port 80 against Host :443', 'http://crm.example', 'crm.example:443', false],
    ['an explicit :443 in the Origin', 'https://crm.example:443', 'crm.example', true],
    [
      'schemes that differ (TLS ends at a proxy)',
      'https://crm.example:8080',
      'crm.example:8080',
      true,
    ],
    ['an IPv4 literal', 'http://127.0.0.1:8080', '127.0.0.1:8080', true],
    ['an IPv6 literal', 'http://[::1]:8080', '[::1]:8080', true],
    ['an IPv6 literal written differently', 'https://[0:0::1]', '[::1]', true],
    ['an IPv6 literal on another port', 'http://[::1]:8080', '[::1]', false],
    ['another IPv6 literal', 'http://[::2]', '[::1]', false],
    ['a null Origin', 'null', 'crm.example', false],
    ['an empty Origin', '', 'crm.example', false],
    ['a non-URL Origin', 'crm.example', 'crm.example', false],
    ['a non-http Origin', 'ftp://crm.example', 'crm.example', false],
    ['a missing Host', 'https://crm.example', undefined, false],
    ['a Host with userinfo', 'https://crm.example', 'evil@crm.example', false],
    ['a Host with a path', 'https://crm.example', 'crm.example/x', false],
    ['a Host with a malformed port', 'https://crm.example', 'crm.example:x', false],
  ])('Origin vs Host: %s', (_name, origin, host, passes) => {
    expect(crossOriginRefusal('POST', { origin, host })).toEqual(
      passes ? null : { reason: 'origin' },
    );
  });

  test('never reads X-Forwarded-Host', () => {
    const headers = {
      origin: 'https://public.example',
      host: 'internal:8080',
      'x-forwarded-host': 'public.example',
    };
    expect(crossOriginRefusal('POST', headers)).toEqual({ reason: 'origin' });
  });

  describe('with SVC_CORS_ORIGINS', () => {
    const listed = ['https://app.example', 'http://localhost:5173'];

    test.each(['cross-site', 'same-site'])(
      'passes a write from a listed origin even when Sec-Fetch-Site says %s',
      (fetchSite) => {
        const headers = { 'sec-fetch-site': fetchSite, origin: 'https://app.example', host: HOST };
        expect(crossOriginRefusal('POST', headers, listed)).toBeNull();
      },
    );

    test('passes a write from a listed origin that sends no Sec-Fetch-Site', () => {
      const headers = { origin: 'http://localhost:5173', host: HOST };
      expect(crossOriginRefusal('DELETE', headers, listed)).toBeNull();
    });

    test.each([
      'https://evil.example',
      'http://app.example',
      'https://app.example:8443',
      'https://sub.app.example',
      'null',
    ])('still refuses a write from %s, which is not listed', (origin) => {
      const headers = { 'sec-fetch-site': 'cross-site', origin, host: HOST };
      expect(crossOriginRefusal('POST', headers, listed)).toEqual({ reason: 'fetch-site' });
    });

    test('still refuses a cross-site write that names no Origin', () => {
      const headers = { 'sec-fetch-site': 'cross-site', host: HOST };
      expect(crossOriginRefusal('POST', headers, listed)).toEqual({ reason: 'fetch-site' });
    });
  });

  test('answers the refusal body of SPEC 7.2', () => {
    expect(CROSS_ORIGIN_BODY).toEqual({
      error: 'cross-origin request refused',
      code: 'request_cross_origin',
    });
  });
});
