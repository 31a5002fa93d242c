// One operation POSTed as JSON runs Yoga's operation pipeline without Yoga's request
// parsing and Response objects (src/graph/json-operation.ts). Its answers must be the
// ones Yoga's whole path gives: each case below is asked over HTTP (the JSON path) and of
// Yoga's own handler in the same process, and the two answers compared.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { resolveCredential } from '../../src/auth/credentials.js';
import { createContext, type Actor } from '../../src/context.js';
import { jsonMediaType, jsonOperation } from '../../src/graph/json-operation.js';
import { GRAPH_PATH } from '../../src/graph/server.js';
import { freshWorkspaceHeaders } from '../support/contacts.js';
import { fixturePluginsDir } from '../support/env.js';
import {
  captureLogger,
  startTestService,
  testConfig,
  type TestService,
} from '../support/service.js';

const ENV = { SVC_GRAPH_OPERATION_TIMEOUT: '300ms', SVC_GRAPH_RETRY_AFTER: '3s' };
let svc: TestService;
let admin: Actor;

beforeAll(async () => {
  svc = await startTestService({ env: ENV, plugins: { dir: fixturePluginsDir } });
  const credential = await resolveCredential(svc.service.database.db, svc.service.access, {
    authorization: `Bearer ${svc.adminToken}`,
  });
  if (!('actor' in credential) || !credential.actor) throw new Error('the admin token must work');
  admin = credential.actor;
});

afterAll(() => svc.stop());

interface Answer {
  status: number;
  contentType: string | null;
  retryAfter: string | null;
  body: unknown;
}

async function answerOf(response: Response): Promise<Answer> {
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    retryAfter: response.headers.get('retry-after'),
    body: JSON.parse(await response.text()) as unknown,
  };
}

/** The request over HTTP: a plain JSON operation takes the JSON path. */
async function overHttp(body: string, accept: string | null, signedIn: boolean): Promise<Answer> {
  const response = await svc.request(`${GRAPH_PATH}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(accept === null ? {} : { accept }),
      ...(signedIn ? svc.adminHeaders : {}),
    },
    body,
  });
  return answerOf(response);
}

/** The same request answered by Yoga's own handler, as before the JSON path. */
async function ofYoga(body: string, accept: string | null, signedIn: boolean): Promise<Answer> {
  const { graph } = svc.service.app;
  const request = new graph.fetchAPI.Request(`http://localhost${GRAPH_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(accept === null ? {} : { accept }) },
    body,
  });
  const operation = new AbortController();
  const context = createContext({
    config: testConfig(ENV),
    database: svc.service.database,
    log: captureLogger().log,
    requestId: 'yoga',
    actor: signedIn ? admin : null,
    access: svc.service.access,
    clientAddress: '127.0.0.1',
    headers: request.headers,
    responseCookies: [],
    signal: operation.signal,
    cancel: (reason) => operation.abort(reason),
    events: svc.service.events,
  });
  return answerOf(await graph.handleOperation(request, context));
}

const operations: [string, Record<string, unknown>, boolean][] = [
  ['an answer with data', { query: '{ version }' }, true],
  [
    'variables and an operation name',
    {
      query: 'query V($n: Int) { probeNumbers(first: $n) } query W { version }',
      variables: { n: 3 },
      operationName: 'V',
    },
    true,
  ],
  ['a syntax error', { query: '{ version ' }, true],
  ['an unknown field', { query: '{ nope }' }, true],
  [
    'a malformed variable',
    { query: 'query ($n: Int) { probeNumbers(first: $n) }', variables: { n: 'x' } },
    true,
  ],
  ['a page size out of range', { query: '{ probeNumbers(first: 0) }' }, true],
  [
    'an operation over the complexity limit',
    {
      query: `{ ${'abcdefghi'
        .split('')
        .map((a) => `${a}: probeNumbers(first: 300)`)
        .join(' ')} }`,
    },
    true,
  ],
  ['an operation past its deadline', { query: '{ probeSlow }' }, true],
  ['a refusal from a resolver, in a mutation', { query: 'mutation { logout }' }, true],
  ['an anonymous caller asking for a signed-in field', { query: '{ me { id } }' }, false],
  [
    'an anonymous caller asking for the schema',
    { query: '{ __schema { queryType { name } } }' },
    false,
  ],
  ['an operation name that names nothing', { query: '{ version }', operationName: 'Nope' }, true],
  [
    'parameters given as null',
    { query: '{ version }', variables: null, operationName: null, extensions: null },
    true,
  ],
];

const accepts: (string | null)[] = [
  null,
  '*/*',
  'application/json',
  'application/graphql-response+json',
  'application/graphql-response+json, application/json;q=0.9',
  'application/json, application/graphql-response+json',
  'text/html, application/*',
];

describe('a JSON operation answers as Yoga answers it', () => {
  test.each(operations)('%s, under every Accept', async (_name, params, signedIn) => {
    const body = JSON.stringify(params);
    expect(jsonOperation('application/json', Buffer.from(body))).not.toBeNull();
    for (const accept of accepts) {
      const [direct, yoga] = await Promise.all([
        overHttp(body, accept, signedIn),
        ofYoga(body, accept, signedIn),
      ]);
      expect({ accept, ...direct }).toEqual({ accept, ...yoga });
    }
  });
});

describe('what takes the JSON path', () => {
  test.each([
    ['a batch', '[{"query":"{ version }"}]'],
    ['a body that is not JSON', '{ version }'],
    ['a query that is not text', '{"query":1}'],
    ['no query', '{"variables":{}}'],
    ['an unknown parameter', '{"query":"{ version }","extra":1}'],
    ['variables that are a list', '{"query":"{ version }","variables":[]}'],
    ['an operation name that is not text', '{"query":"{ version }","operationName":1}'],
    ['extensions that are text', '{"query":"{ version }","extensions":"x"}'],
  ])('%s goes to Yoga, whose refusal stands', async (_name, body) => {
    expect(jsonOperation('application/json', Buffer.from(body))).toBeNull();
    const answer = await overHttp(body, null, true);
    expect((answer.body as { errors?: unknown[] }).errors).not.toHaveLength(0);
    expect(answer).toEqual(await ofYoga(body, null, true));
  });

  test('only a JSON body does', () => {
    const body = Buffer.from('{"query":"{ version }"}');
    expect(jsonOperation('application/json; charset=utf-8', body)).toEqual({
      query: '{ version }',
    });
    expect(jsonOperation('application/graphql+json', body)).not.toBeNull();
    expect(jsonOperation('application/graphql', body)).toBeNull();
    expect(jsonOperation('text/plain', body)).toBeNull();
    expect(jsonOperation(undefined, body)).toBeNull();
    expect(jsonOperation('application/json', null)).toBeNull();
  });

  test.each([
    [undefined, 'application/json'],
    ['*/*', 'application/json'],
    ['application/*', 'application/json'],
    ['application/graphql-response+json', 'application/graphql-response+json'],
    ['Application/GraphQL-Response+JSON; charset=UTF-8', 'application/graphql-response+json'],
    ['application/graphql-response+json, application/json', 'application/graphql-response+json'],
    ['application/json, application/graphql-response+json', 'application/json'],
    ['application/json; charset=latin1, */*', 'application/json'],
    ['application/json; charset=latin1', null],
    ['multipart/mixed', null],
    ['text/html', null],
  ])('Accept %s is answered as %s', (accept, type) => {
    expect(jsonMediaType(accept)).toBe(type);
  });

  test('an Accept the JSON path leaves to Yoga is answered as before', async () => {
    const body = JSON.stringify({ query: '{ version }' });
    const multipart = await svc.request(`${GRAPH_PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'multipart/mixed',
        ...svc.adminHeaders,
      },
      body,
    });
    expect(multipart.status).toBe(200);
    expect(multipart.headers.get('content-type')).toMatch(/^multipart\/mixed/);
    expect(await multipart.text()).toContain('{"data":{"version":"0.9.0"}}');
    const html = await svc.request(`${GRAPH_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/html', ...svc.adminHeaders },
      body,
    });
    expect(html.status).toBe(406);
  });
});

// A query a signed-in caller sent before runs on the graph's direct path
// (src/graph/direct.ts). Each text below is first answered cleanly (which keeps it), then
// sent with variables that make it fail somewhere: before it runs (input and complexity
// limits), in a resolver, or past its deadline. Each answer must be Yoga's.
describe('a query sent again answers as Yoga answers it', () => {
  const cases: [string, string, Record<string, unknown>, Record<string, unknown>][] = [
    [
      'a variable past its input limit',
      'query ($q: String) { contactPage(q: $q) { total } }',
      { q: 'ada' },
      { q: 'x'.repeat(5000) },
    ],
    [
      'a variable that takes it over the complexity limit',
      'query ($n: Int) { a: probeNumbers(first: $n) b: probeNumbers(first: $n) }',
      { n: 3 },
      { n: 2000 },
    ],
    [
      'a variable a resolver refuses',
      'query ($n: Int) { probeNumbers(first: $n) }',
      { n: 3 },
      { n: 0 },
    ],
    [
      'a malformed variable',
      'query ($day: Date!) { probeEcho(id: "00000000-0000-4000-8000-000000000000", day: $day, at: "2026-01-01T00:00:00Z") { day } }',
      { day: '2026-01-02' },
      { day: 'tomorrow' },
    ],
    [
      'a run past its deadline',
      'query ($ms: Int!) { probeWait(ms: $ms) }',
      { ms: 1 },
      { ms: 2000 },
    ],
  ];

  test.each(cases)('%s', async (_name, query, clean, failing) => {
    const first = await overHttp(JSON.stringify({ query, variables: clean }), null, true);
    expect(first.body).not.toHaveProperty('errors');
    // Again, clean: the same answer.
    const again = await overHttp(JSON.stringify({ query, variables: clean }), null, true);
    expect(again).toEqual(first);
    const body = JSON.stringify({ query, variables: failing });
    const [direct, yoga] = await Promise.all([
      overHttp(body, null, true),
      ofYoga(body, null, true),
    ]);
    expect((direct.body as { errors?: unknown[] }).errors).not.toHaveLength(0);
    expect(direct).toEqual(yoga);
  });

  test('an operation named in a document of several', async () => {
    const query = 'query A { version } query B($n: Int) { probeNumbers(first: $n) }';
    for (const [operationName, variables] of [
      ['A', {}],
      ['B', { n: 2 }],
      ['A', {}],
      ['B', { n: 2 }],
      ['C', {}],
    ] as const) {
      const body = JSON.stringify({ query, variables, operationName });
      const [direct, yoga] = await Promise.all([
        overHttp(body, null, true),
        ofYoga(body, null, true),
      ]);
      expect(direct).toEqual(yoga);
    }
  });

  test('an anonymous caller never takes it', async () => {
    const body = JSON.stringify({ query: '{ me { id } }' });
    await overHttp(body, null, true);
    await overHttp(body, null, true);
    const [direct, yoga] = await Promise.all([
      overHttp(body, null, false),
      ofYoga(body, null, false),
    ]);
    expect(direct.body).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHENTICATED' } }] });
    expect(direct).toEqual(yoga);
  });
});

describe('access on the direct path', () => {
  test('a caller whose token lacks a root field’s scope is refused as Yoga refuses', async () => {
    const body = JSON.stringify({ query: '{ version adminSettings { __typename } }' });
    // Kept from the admin's clean answers.
    expect((await overHttp(body, null, true)).body).not.toHaveProperty('errors');
    expect((await overHttp(body, null, true)).body).not.toHaveProperty('errors');
    const { headers } = await freshWorkspaceHeaders(svc, ['contacts:read']);
    const credential = await resolveCredential(svc.service.database.db, svc.service.access, {
      authorization: headers.authorization,
    });
    if (!('actor' in credential) || !credential.actor) throw new Error('the token must work');
    const scoped = credential.actor;
    const response = await svc.request(GRAPH_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const direct = await answerOf(response);
    expect(direct.body).toMatchObject({
      errors: [{ extensions: { reason: 'scope_missing', meta: { scope: 'meta:read' } } }],
    });
    const request = new svc.service.app.graph.fetchAPI.Request(`http://localhost${GRAPH_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const operation = new AbortController();
    const context = createContext({
      config: testConfig(ENV),
      database: svc.service.database,
      log: captureLogger().log,
      requestId: 'yoga',
      actor: scoped,
      access: svc.service.access,
      clientAddress: '127.0.0.1',
      headers: request.headers,
      responseCookies: [],
      signal: operation.signal,
      cancel: (reason) => operation.abort(reason),
      events: svc.service.events,
    });
    const yoga = await answerOf(await svc.service.app.graph.handleOperation(request, context));
    expect(direct).toEqual(yoga);
    // And a token holding the scope is answered on the direct path.
    const { headers: reader } = await freshWorkspaceHeaders(svc, ['meta:read']);
    const allowed = await svc.request(GRAPH_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...reader },
      body,
    });
    expect(await allowed.json()).toEqual({
      data: { version: '0.9.0', adminSettings: { __typename: 'AdminSettings' } },
    });
  });
});
