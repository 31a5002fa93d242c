import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { bearer, createUser, sessionCookieFor, tokenFor } from '../support/factories.js';
import { fixturePluginsDir } from '../support/env.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SVC_GRAPH_ANONYMOUS_MAX_BYTES: '600',
      SVC_GRAPH_ANONYMOUS_QUERY_MAX_BYTES: '300',
      SVC_GRAPH_ANONYMOUS_MAX_TOKENS: '30',
      SVC_GRAPH_ANONYMOUS_ANSWER_MAX_BYTES: '400',
      SVC_GRAPH_OPERATIONS_PER_USER: '1',
      SVC_GRAPH_RETRY_AFTER: '2s',
      SVC_STREAMS_PER_USER: '1',
      SVC_STREAM_LIFETIME: '400ms',
    },
    plugins: { dir: fixturePluginsDir },
  });
});

afterAll(() => svc.stop());

const WRITE = 'mutation { logout }';

function post(headers: Record<string, string>, query = WRITE) {
  return svc.request(`/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...svc.adminHeaders, ...headers },
    body: JSON.stringify({ query }),
  });
}

describe('cross-origin writes', () => {
  test('a write from a page at another origin is refused with 403 before the graph reads it, and logged', async () => {
    const response = await post({ origin: 'https://elsewhere.example' });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({
      error: 'cross-origin request refused',
      code: 'request_cross_origin',
    });
    expect(svc.lines).toContainEqual(expect.objectContaining({ level: 'warn', reason: 'origin' }));
  });

  test('Sec-Fetch-Site is read first: cross-site is refused with reason fetch-site', async () => {
    const host = new URL(svc.origin).host;
    const response = await post({ 'sec-fetch-site': 'cross-site', origin: `http://${host}` });
    expect(response.status).toBe(403);
    expect(svc.lines).toContainEqual(
      expect.objectContaining({ level: 'warn', reason: 'fetch-site' }),
    );
  });

  test.each([
    ['the service’s own pages (same-origin)', () => ({ 'sec-fetch-site': 'same-origin' })],
    [
      'an Origin whose host and port match Host',
      () => ({ origin: `https://${new URL(svc.origin).host}` }),
    ],
    ['neither header (a program, not a browser)', () => ({})],
  ])('a write from %s passes', async (_what, headers) => {
    const response = await post(headers());
    expect(response.status).toBe(200);
  });

  test('reads are never refused, sent by GET or by POST', async () => {
    const crossSite = { origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' };
    const probe = await svc.request(`/api/healthz`, {
      headers: { ...svc.adminHeaders, ...crossSite },
    });
    expect(probe.status).toBe(200);
    const query = await post(crossSite, '{ me { email } }');
    expect(query.status).toBe(200);
    expect(await query.json()).toEqual({ data: { me: { email: expect.any(String) } } });
  });

  test('a POSTed operation is judged by the operation it runs; doubt is a write', async () => {
    const crossSite = { 'sec-fetch-site': 'cross-site' };
    const named = (operationName: string) =>
      svc.request(`/api/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...svc.adminHeaders, ...crossSite },
        body: JSON.stringify({ query: 'query A { version } mutation B { logout }', operationName }),
      });
    expect((await named('A')).status).toBe(200);
    expect((await named('B')).status).toBe(403);
    const unreadable = await svc.request(`/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...svc.adminHeaders, ...crossSite },
      body: '{ "query": ',
    });
    expect(unreadable.status).toBe(403);
    const upload = new FormData();
    upload.set('operations', JSON.stringify({ query: '{ version }' }));
    upload.set('map', '{}');
    const multipart = await svc.request(`/api/graphql`, {
      method: 'POST',
      headers: { ...svc.adminHeaders, ...crossSite },
      body: upload,
    });
    expect(multipart.status).toBe(403);
    expect(await multipart.json()).toEqual({
      error: 'cross-origin request refused',
      code: 'request_cross_origin',
    });
  });

  test('other routes judge a write by its method', async () => {
    const response = await svc.request(`/api/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...svc.adminHeaders,
        origin: 'https://elsewhere.example',
      },
      body: '{}',
    });
    expect(response.status).toBe(403);
  });
});

describe('anonymous callers', () => {
  function anonymous(body: BodyInit, contentType = 'application/json') {
    return svc.request(`/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
  }

  async function expectUnauthenticated(response: Response) {
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      data: null;
      errors: { extensions: Record<string, unknown> }[];
    };
    expect(body.data).toBeNull();
    expect(body.errors[0]?.extensions).toEqual({
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
      meta: {},
    });
  }

  test('may call login and locale but nothing else', async () => {
    const { body } = await svc.anonymous('{ version }');
    expect(body.errors?.[0]).toMatchObject({
      message: 'authentication required',
      extensions: { code: 'UNAUTHENTICATED' },
    });
  });

  test('a multipart request is refused', async () => {
    const form = new FormData();
    form.set('operations', JSON.stringify({ query: '{ __typename }' }));
    form.set('map', '{}');
    await expectUnauthenticated(await svc.request(`/api/graphql`, { method: 'POST', body: form }));
  });

  test('a body over SVC_GRAPH_ANONYMOUS_MAX_BYTES is refused', async () => {
    await expectUnauthenticated(
      await anonymous(
        JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(700) } }),
      ),
    );
  });

  test('a query over SVC_GRAPH_ANONYMOUS_QUERY_MAX_BYTES is refused', async () => {
    await expectUnauthenticated(
      await anonymous(JSON.stringify({ query: `{ __typename } # ${'x'.repeat(320)}` })),
    );
  });

  test('a query of more than SVC_GRAPH_ANONYMOUS_MAX_TOKENS tokens is refused', async () => {
    await expectUnauthenticated(
      await anonymous(JSON.stringify({ query: `{ ${'a: __typename '.repeat(12)}}` })),
    );
  });

  test('an answer over SVC_GRAPH_ANONYMOUS_ANSWER_MAX_BYTES is replaced by UNAUTHENTICATED', async () => {
    // Six unknown fields answer six validation errors, well over the 400-byte cap; the
    // replacement is one error with no path. (Anonymous introspection is refused first.)
    const response = await anonymous(JSON.stringify({ query: '{ a b c d e f }' }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      data: null,
      errors: [
        {
          message: 'authentication required',
          extensions: { code: 'UNAUTHENTICATED', reason: 'authentication_required', meta: {} },
        },
      ],
    });
  });

  test('a signed-in caller has none of these caps', async () => {
    const response = await post({}, '{ __schema { types { name } } }');
    const body = (await response.json()) as { data: { __schema: { types: unknown[] } } };
    expect(body.data.__schema.types.length).toBeGreaterThan(5);
  });
});

describe('operation slots', () => {
  test('a user holding every operation slot gets 429 with Retry-After until one frees', async () => {
    const user = await createUser(svc.db.database.db, svc.workspace);
    const headers = bearer(await tokenFor(svc.db.database.db, user));
    const long = post(headers, '{ probeWait(ms: 1500) }');
    let refused: Response | null = null;
    // The long operation takes the user's only slot within a few milliseconds.
    for (let i = 0; i < 200 && !refused; i += 1) {
      const response = await post(headers, '{ __typename }');
      if (response.status === 429) refused = response;
      else await response.body?.cancel();
    }
    expect(refused?.headers.get('retry-after')).toBe('2');
    expect(
      ((await refused?.json()) as { errors: { extensions: unknown }[] }).errors[0]?.extensions,
    ).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfter: 2,
    });
    expect((await long).status).toBe(200);
    expect((await post(headers)).status).toBe(200);
  });
});

describe('plugin routes held to a scope area', () => {
  async function get(path: string, headers: Record<string, string> = {}) {
    return svc.request(`/api/plugins/probe/${path}`, { headers });
  }

  test('a token lacking the area gets 403 naming the scope, even for a path the plugin does not serve', async () => {
    const token = bearer(await tokenFor(svc.db.database.db, svc.admin, { scopes: ['users:read'] }));
    for (const path of ['items/1', 'no/such/path']) {
      const response = await get(path, token);
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({ error: 'scope required: probe:read' });
    }
  });

  test('a token holding the area reaches the route, and gets 404 for a path the plugin does not serve', async () => {
    const token = bearer(
      await tokenFor(svc.db.database.db, svc.admin, {
        scopes: ['probe:read'],
        catalogue: svc.service.access,
      }),
    );
    const response = await get('items/7', token);
    expect(await response.json()).toEqual({ id: '7', userId: svc.admin.id });
    expect((await get('no/such/path', token)).status).toBe(404);
  });

  test('a write to the area needs its write scope', async () => {
    const token = bearer(
      await tokenFor(svc.db.database.db, svc.admin, {
        scopes: ['probe:read'],
        catalogue: svc.service.access,
      }),
    );
    const response = await svc.request(`/api/plugins/probe/items/7`, {
      method: 'POST',
      headers: token,
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: 'scope required: probe:write' });
  });

  test('a session is never narrowed by scopes', async () => {
    const cookie = await sessionCookieFor(svc.db.database.db, svc.admin);
    expect((await get('items/3', { cookie })).status).toBe(200);
  });

  test('no credential answers 401, and an unusable token answers invalid token', async () => {
    expect((await get('items/3')).status).toBe(401);
    const response = await get('items/3', { authorization: 'Bearer a1_not-a-token' });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: 'invalid token' });
  });

  test('a public route needs no credential', async () => {
    expect(await (await get('ping?n=1')).text()).toBe('pong 1');
  });

  test('a request open past SVC_STREAM_LIFETIME is closed', async () => {
    const user = await createUser(svc.db.database.db, svc.workspace);
    const token = bearer(await tokenFor(svc.db.database.db, user));
    const started = Date.now();
    await expect(get('wait/10000', token)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('a user holding SVC_STREAMS_PER_USER plugin requests gets 429 with Retry-After', async () => {
    const user = await createUser(svc.db.database.db, svc.workspace);
    const token = bearer(await tokenFor(svc.db.database.db, user));
    // Held until its client goes away or SVC_STREAM_LIFETIME closes it; the requests
    // below go on until it is in (it may start after several of them) or has ended.
    const client = new AbortController();
    const open = svc.request(`/api/plugins/probe/wait/600000`, {
      headers: token,
      signal: client.signal,
    });
    let ended = false;
    open.then(
      () => (ended = true),
      () => (ended = true),
    );
    let refused: Response | null = null;
    while (!refused && !ended) {
      const response = await get('items/1', token);
      if (response.status === 429) refused = response;
      else await response.body?.cancel();
    }
    expect(refused?.headers.get('retry-after')).toBe('2');
    // The client gone, its slot is the user's again.
    client.abort();
    await expect(open).rejects.toThrow();
    let answered: number | null = null;
    for (let i = 0; i < 200 && answered !== 200; i += 1) {
      const response = await get('items/1', token);
      answered = response.status;
      await response.body?.cancel();
    }
    expect(answered).toBe(200);
  });
});
