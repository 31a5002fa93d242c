import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { getIntrospectionQuery } from 'graphql';
import {
  INTERACTIVE_PAGE_OPTIONS,
  LOGIN_OPERATION,
  LOGIN_VARIABLES,
  PAGE_SCRIPT,
} from '../../src/graph/interactive-page.js';
import { PASSWORD } from '../support/factories.js';
import { decoded, rawGraph, rawHttp, type RawHttpAnswer } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ env: { SVC_DEV_GRAPHIQL: '1' }, listen: true });
});

afterAll(() => svc.stop());

/** The introspection query GraphiQL sends when the page opens. */
const INTROSPECTION = {
  query: getIntrospectionQuery({ schemaDescription: true, inputValueDeprecation: true }),
  operationName: 'IntrospectionQuery',
};

function typeNames(answer: RawHttpAnswer): string[] {
  const body = JSON.parse(decoded(answer).toString('utf8')) as {
    data?: { __schema?: { types: { name: string }[] } };
  };
  return body.data?.__schema?.types.map((type) => type.name) ?? [];
}

function openPage(headers: Record<string, string> = {}) {
  return rawHttp(`${svc.url}/api/graphql`, { headers: { accept: 'text/html', ...headers } });
}

describe('the page', () => {
  let page: string;

  beforeAll(async () => {
    page = decoded(await openPage()).toString('utf8');
  });

  test('with SVC_DEV_GRAPHIQL set, a browser opening /api/graphql gets the interactive page', async () => {
    const response = await fetch(`${svc.url}/api/graphql`, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const text = await response.text();
    expect(text).toMatch(/<title>svc GraphQL<\/title>/);
    expect(text.toLowerCase()).toContain('graphiql');
  });

  test('opens on a login tab whose variables hold placeholders, never a password', () => {
    expect(page).toContain(JSON.stringify(INTERACTIVE_PAGE_OPTIONS));
    expect(INTERACTIVE_PAGE_OPTIONS.defaultTabs).toEqual([
      { query: LOGIN_OPERATION, variables: JSON.stringify(LOGIN_VARIABLES, null, 2) },
    ]);
    expect(LOGIN_OPERATION).toMatch(/^mutation Login\(/m);
    expect(LOGIN_OPERATION).toContain('`svc dev` prints the email and');
    // GraphiQL fills the first tab's variables editor from its storage, seeded on a first visit.
    expect(page).toContain(
      `localStorage.setItem('graphiql:variables', ${JSON.stringify(JSON.stringify(LOGIN_VARIABLES, null, 2))})`,
    );
    expect(page).not.toContain(PASSWORD);
  });

  test('runs its script before GraphiQL: it reloads the schema after a successful login', () => {
    const script = page.indexOf(PAGE_SCRIPT);
    expect(script).toBeGreaterThan(-1);
    expect(script).toBeLessThan(
      page.search(/<script src="\/api\/interactive-page\/graphiql\.[0-9a-f]{16}\.js">/),
    );
    expect(script).toBeLessThan(page.indexOf('YogaGraphiQL.renderYogaGraphiQL('));
    expect(PAGE_SCRIPT).toContain('body.data.login && !body.errors) refetchSchema()');
    expect(PAGE_SCRIPT).toContain('[aria-label^="Re-fetch GraphQL schema"]');
  });

  test('GraphiQL’s bundle still labels the button the script presses', async () => {
    // scripts/interactive-page-check.ts presses it in a browser.
    const bundle = assetsOf(page).find((url) => /\/graphiql\.[0-9a-f]{16}\.js$/.test(url));
    const answer = await rawHttp(`${svc.url}${bundle}`);
    expect(decoded(answer).toString('utf8')).toContain('Re-fetch GraphQL schema (');
  });
});

/** The asset paths a page names (stylesheet, icon, scripts, workers). */
function assetsOf(html: string): string[] {
  return [...html.matchAll(/\/api\/interactive-page\/[\w.-]+/g)].map(([path]) => path);
}

describe('the page’s assets', () => {
  let page: RawHttpAnswer;
  let paths: string[];

  beforeAll(async () => {
    page = await openPage({ 'accept-encoding': 'br' });
    paths = assetsOf(decoded(page).toString('utf8'));
  });

  test('the page is a few kilobytes that a browser asks for again on each visit', () => {
    expect(page.status).toBe(200);
    expect(decoded(page).length).toBeLessThan(16 * 1024);
    expect(page.headers['cache-control']).toBe('no-cache');
  });

  test('it names its bundle, styles, icon and three editor workers, each named after its content and kept for good', async () => {
    expect(paths.map((path) => path.replace(/\.[0-9a-f]{16}\./, '.<hash>.')).sort()).toEqual([
      '/api/interactive-page/editor-worker.<hash>.js',
      '/api/interactive-page/favicon.<hash>.ico',
      '/api/interactive-page/graphiql.<hash>.css',
      '/api/interactive-page/graphiql.<hash>.js',
      '/api/interactive-page/graphql-worker.<hash>.js',
      '/api/interactive-page/json-worker.<hash>.js',
    ]);
    let total = 0;
    for (const path of paths) {
      const answer = await rawHttp(`${svc.url}${path}`, { headers: { 'accept-encoding': 'br' } });
      expect(answer.status).toBe(200);
      expect(answer.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      const body = decoded(answer);
      total += body.length;
      const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
      expect(path).toContain(`.${hash}.`);
      expect(answer.headers['content-type']).toMatch(
        path.endsWith('.css')
          ? /^text\/css/
          : path.endsWith('.js')
            ? /^text\/javascript/
            : /^image\//,
      );
    }
    // The bundle render-graphiql inlined into every page, now fetched once.
    expect(total).toBeGreaterThan(8_000_000);
  });

  test('a name that is no asset answers 404', async () => {
    const answer = await rawHttp(`${svc.url}/api/interactive-page/graphiql.0000000000000000.js`);
    expect(answer.status).toBe(404);
  });
});

describe('signing in from the page', () => {
  test('the login tab as it opens, placeholders unchanged, is judged a wrong sign-in, not an over-size request', async () => {
    const { body } = await svc.anonymous(LOGIN_OPERATION, LOGIN_VARIABLES);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions).toMatchObject({ reason: 'credentials_invalid' });
  });

  test('the login tab signs in with the printed email and password, and the session introspects', async () => {
    const variables = { email: svc.admin.email, password: PASSWORD };
    const { headers, body } = await svc.anonymous(LOGIN_OPERATION, variables);
    expect(body).toEqual({
      data: {
        login: {
          me: { id: svc.admin.id, email: svc.admin.email, name: svc.admin.name, role: 'admin' },
        },
      },
    });
    const cookie = (headers.getSetCookie()[0] ?? '').split(';')[0] as string;
    const schema = await rawGraph(svc.url, INTROSPECTION, { cookie });
    expect(typeNames(schema)).toEqual(expect.arrayContaining(['Query', 'Mutation', 'Contact']));
  });
});

describe('the schema before signing in', () => {
  test('GraphiQL’s introspection query answers the whole schema to an anonymous caller', async () => {
    const answer = await rawGraph(svc.url, INTROSPECTION);
    expect(answer.status).toBe(200);
    // Over SVC_GRAPH_ANONYMOUS_QUERY_MAX_BYTES, _MAX_TOKENS and _ANSWER_MAX_BYTES.
    expect(Buffer.byteLength(INTROSPECTION.query)).toBeGreaterThan(1024);
    expect(decoded(answer).length).toBeGreaterThan(16384);
    expect(typeNames(answer)).toEqual(expect.arrayContaining(['Query', 'Mutation', 'Contact']));
  });

  test('an anonymous query as long with a data field beside it is still held to the caps', async () => {
    const query = INTROSPECTION.query.replace('__schema {', 'me { email } __schema {');
    const { body } = await svc.anonymous(query);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions).toEqual({
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
      meta: {},
    });
  });
});

describe('compression of the page’s bundle', () => {
  let plain: RawHttpAnswer;
  let bundle: string;

  function openBundle(headers: Record<string, string> = {}) {
    return rawHttp(`${svc.url}${bundle}`, { headers });
  }

  beforeAll(async () => {
    const page = decoded(await openPage()).toString('utf8');
    bundle = assetsOf(page).find(
      (path) => path.endsWith('.js') && path.includes('/graphiql.'),
    ) as string;
    plain = await openBundle();
  });

  test('without Accept-Encoding the bundle comes plain, saying it varies with it', () => {
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-length']).toBe(String(plain.body.length));
    expect(plain.headers.vary).toMatch(/Accept-Encoding/);
    expect(plain.body.length).toBeGreaterThan(1_000_000);
  });

  test.each(['br', 'gzip'])(
    'with Accept-Encoding %s it comes compressed, smaller, and decodes to the same bundle',
    async (encoding) => {
      const answer = await openBundle({ 'accept-encoding': encoding });
      expect(answer.headers['content-encoding']).toBe(encoding);
      expect(answer.headers.vary).toMatch(/Accept-Encoding/);
      expect(answer.headers['content-length']).toBe(String(answer.body.length));
      expect(answer.body.length).toBeLessThan(plain.body.length / 3);
      expect(decoded(answer).equals(plain.body)).toBe(true);
    },
  );

  test('a browser’s usual Accept-Encoding gets brotli, the same bytes on every request', async () => {
    const headers = { 'accept-encoding': 'gzip, deflate, br, zstd' };
    const first = await openBundle(headers);
    const second = await openBundle(headers);
    expect(first.headers['content-encoding']).toBe('br');
    expect(second.body.equals(first.body)).toBe(true);
  });
});

test('with SVC_DEV_GRAPHIQL set, the graph is still answered on POST /api/graphql', async () => {
  const { status, body } = await svc.graph('{ version }');
  expect(status).toBe(200);
  expect(body).toEqual({ data: { version: expect.any(String) } });
});

test('with SVC_DEV_GRAPHIQL set, a GET query runs', async () => {
  const response = await fetch(
    `${svc.url}/api/graphql?query=${encodeURIComponent('{ version }')}`,
    {
      headers: { ...svc.adminHeaders, accept: 'application/json' },
    },
  );
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ data: { version: expect.any(String) } });
});
