import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { sessionCookieFor } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

const APP = 'https://app.example';
const EVIL = 'https://evil.example';
const ME = '{ me { email } }';
const WRITE = 'mutation { setLocale(locale: "de-DE") }';

// Two services on one database: one as shipped, one whose operator lists a frontend
// hosted elsewhere.
let db: TestDatabase;
let plain: TestService;
let listing: TestService;

beforeAll(async () => {
  db = await createTestDatabase();
  plain = await startTestService({ db });
  listing = await startTestService({
    db,
    env: { SVC_CORS_ORIGINS: `${APP}, http://localhost:5173` },
  });
});

afterAll(async () => {
  await plain?.stop();
  await listing?.stop();
  await db?.drop();
});

/** A browser's fetch from a page at `origin`, carrying the admin's session cookie. */
async function browserPost(svc: TestService, origin: string, query: string) {
  return svc.request(`/api/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      cookie: await sessionCookieFor(db.database.db, svc.admin),
      origin,
      'sec-fetch-site': 'cross-site',
    },
    body: JSON.stringify({ query }),
  });
}

function preflight(svc: TestService, origin: string) {
  return svc.request(`/api/graphql`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type',
    },
  });
}

/** Every Access-Control-* header of an answer. */
function corsOf(response: Response): Record<string, string> {
  const found: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name.startsWith('access-control-')) found[name] = value;
  });
  return found;
}

describe('without SVC_CORS_ORIGINS', () => {
  test('a GET query from another origin with the session cookie gets no data and no CORS headers', async () => {
    const response = await plain.request(`/api/graphql?query=${encodeURIComponent(ME)}`, {
      headers: { cookie: await sessionCookieFor(db.database.db, plain.admin), origin: EVIL },
    });
    expect(response.status).toBe(405);
    expect(corsOf(response)).toEqual({});
    expect(await response.text()).not.toContain('@');
  });

  test('a POSTed read from another origin runs, but names no origin back, so the page cannot read it', async () => {
    const response = await browserPost(plain, EVIL, ME);
    expect(response.status).toBe(200);
    expect(corsOf(response)).toEqual({});
  });

  test('a POSTed mutation from another origin is refused as a cross-origin write, with no CORS headers', async () => {
    const response = await browserPost(plain, EVIL, WRITE);
    expect(response.status).toBe(403);
    expect(corsOf(response)).toEqual({});
    expect(await response.json()).toEqual({
      error: 'cross-origin request refused',
      code: 'request_cross_origin',
    });
  });

  test('a preflight from another origin is answered 204 with no CORS headers, so the browser stops', async () => {
    const response = await preflight(plain, EVIL);
    expect(response.status).toBe(204);
    expect(corsOf(response)).toEqual({});
    expect(response.headers.get('vary')).toBeNull();
  });

  test('the service’s own page needs no CORS: its request runs and names no origin back', async () => {
    const response = await plain.request(`/api/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: await sessionCookieFor(db.database.db, plain.admin),
        origin: plain.origin,
        'sec-fetch-site': 'same-origin',
      },
      body: JSON.stringify({ query: ME }),
    });
    expect(await response.json()).toEqual({ data: { me: { email: plain.admin.email } } });
    expect(corsOf(response)).toEqual({});
  });
});

describe('with SVC_CORS_ORIGINS', () => {
  test('a listed origin’s preflight gets its origin, credentials, methods and the headers it asked for', async () => {
    const response = await preflight(listing, APP);
    expect(response.status).toBe(204);
    expect(corsOf(response)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'GET, POST, PUT, DELETE',
      'access-control-allow-headers': 'content-type',
      'access-control-max-age': '600',
    });
    expect(response.headers.get('vary')).toBe('Origin, Access-Control-Request-Headers');
  });

  test('a listed origin reads with the session cookie and may read the answer', async () => {
    const response = await browserPost(listing, APP, ME);
    expect(await response.json()).toEqual({ data: { me: { email: listing.admin.email } } });
    expect(corsOf(response)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'Retry-After',
    });
    expect(response.headers.get('vary')).toBe('Origin');
  });

  test('a listed origin’s mutation passes the cross-origin write guard', async () => {
    const response = await browserPost(listing, APP, 'mutation { setLocale(locale: "de-DE") }');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { setLocale: 'de-DE' } });
  });

  test('an unlisted origin’s write is still refused, with no CORS headers', async () => {
    const response = await browserPost(listing, EVIL, WRITE);
    expect(response.status).toBe(403);
    expect(corsOf(response)).toEqual({});
  });

  test('an unlisted origin’s preflight gets no CORS headers', async () => {
    const response = await preflight(listing, EVIL);
    expect(response.status).toBe(204);
    expect(corsOf(response)).toEqual({});
  });

  test('a refusal to a listed origin carries its CORS headers, so the page can read why', async () => {
    const response = await listing.request(`/api/graphql?query=${encodeURIComponent(ME)}`, {
      headers: { origin: APP },
    });
    expect(response.status).toBe(405);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    expect(await response.json()).toEqual({
      error: 'method not allowed: send graph operations with POST',
    });
  });

  test('an origin is matched as browsers send it: scheme and port count', async () => {
    for (const origin of ['http://app.example', 'https://app.example:8443']) {
      expect(corsOf(await preflight(listing, origin))).toEqual({});
    }
  });

  test('no other route answers CORS', async () => {
    const response = await listing.request(`/api/healthz`, { headers: { origin: APP } });
    expect(response.status).toBe(200);
    expect(corsOf(response)).toEqual({});
  });
});
