import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ env: { SVC_DEV_GRAPHIQL: '1' } });
});

afterAll(() => svc.stop());

test('with SVC_DEV_GRAPHIQL set, a browser opening /api/graphql gets the interactive page', async () => {
  const response = await fetch(`${svc.url}/api/graphql`, { headers: { accept: 'text/html' } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  const page = await response.text();
  expect(page).toMatch(/<title>svc GraphQL<\/title>/);
  expect(page.toLowerCase()).toContain('graphiql');
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
