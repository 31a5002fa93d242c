// The agent endpoint's HTTP answers (SPEC 4.4, 7.2, 8.1) beside its tools: POST only, the
// JSON body cap, and the per-user operation slots it shares with /api/graphql.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { fixturePluginsDir } from '../support/env.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    env: { SVC_GRAPH_OPERATIONS_PER_USER: '1', SVC_GRAPH_BODY_MAX_BYTES: '2048' },
    plugins: { dir: fixturePluginsDir, only: ['probe'] },
  });
});
afterAll(() => svc.stop());

const LIST_TOOLS = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

function mcp(body: unknown, init: RequestInit = {}) {
  return svc.request(`/api/mcp`, {
    method: 'POST',
    headers: {
      ...svc.adminHeaders,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

describe('/api/mcp over HTTP', () => {
  test('answers a tool listing to a POST', async () => {
    const response = await mcp(LIST_TOOLS);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result: { tools: unknown[] } };
    expect(body.result.tools).toHaveLength(4);
  });

  test('any other method gets 405 with Allow: POST (the endpoint keeps no sessions)', async () => {
    for (const method of ['GET', 'DELETE', 'PUT']) {
      const response = await svc.request(`/api/mcp`, { method, headers: svc.adminHeaders });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    }
  });

  test('a body over SVC_GRAPH_BODY_MAX_BYTES gets 413 before any tool runs', async () => {
    const padded = { ...LIST_TOOLS, params: { _meta: { pad: 'x'.repeat(2048) } } };
    const response = await mcp(padded);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      error: { code: -32600, message: 'request body too large' },
      id: null,
    });
    expect((await mcp(LIST_TOOLS)).status).toBe(200);
  });

  test('a body that is not JSON gets the JSON-RPC parse error', async () => {
    const response = await mcp('{not json');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: -32700 } });
  });

  test('an agent shares its user’s operation slots with /api/graphql', async () => {
    // SVC_GRAPH_OPERATIONS_PER_USER=1: a running graph operation holds the admin's slot.
    const running = new AbortController();
    const slow = svc
      .request(`/api/graphql`, {
        method: 'POST',
        headers: { ...svc.adminHeaders, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ probeSlow }' }),
        signal: running.signal,
      })
      .catch(() => null);

    let refused: Response | undefined;
    for (let attempt = 0; attempt < 200 && !refused; attempt += 1) {
      const response = await mcp(LIST_TOOLS);
      if (response.status === 429) refused = response;
      else await response.arrayBuffer();
    }
    // SVC_GRAPH_RETRY_AFTER's default, 1s: "1 second", never "1 seconds".
    expect(refused?.headers.get('retry-after')).toBe('1');
    const body = (await refused?.json()) as { error: { code: number; message: string } };
    expect(body.error.code).toBe(-32000);
    expect(body.error.message).toBe('too many attempts; try again in 1 second');

    // The operation ends (its client goes away), its slot comes back.
    running.abort();
    await slow;
    let answered = 0;
    for (let attempt = 0; attempt < 200 && answered !== 200; attempt += 1) {
      const response = await mcp(LIST_TOOLS);
      answered = response.status;
      await response.arrayBuffer();
    }
    expect(answered).toBe(200);
  });
});
