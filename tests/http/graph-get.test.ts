import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CORE_EVENT, record } from '../events/sse.js';
import { sessionCookieFor } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(() => svc.stop());

function get(query: string, headers: Record<string, string>) {
  return svc.request(`/api/graphql?query=${encodeURIComponent(query)}`, { headers });
}

/** Reads an event stream until its first `next` frame and answers that frame's payload. */
async function firstNext(response: Response): Promise<unknown> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended without a next frame: ${text}`);
      text += decoder.decode(value, { stream: true });
      const frame = /event: next\ndata: (.*)\n\n/.exec(text);
      if (frame) return JSON.parse(frame[1] ?? 'null');
    }
  } finally {
    await reader.cancel();
  }
}

describe('GET /api/graphql without SVC_DEV_GRAPHIQL', () => {
  test('a query is refused with 405 and Allow: POST', async () => {
    const cookie = await sessionCookieFor(svc.db.database.db, svc.admin);
    const response = await get('{ me { email } }', { cookie, accept: 'application/json' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toEqual({
      error: 'method not allowed: send graph operations with POST',
    });
  });

  test('a HEAD is refused the same way', async () => {
    const response = await svc.request(`/api/graphql?query={version}`, {
      method: 'HEAD',
      headers: svc.adminHeaders,
    });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });

  test('a subscription asking for an event stream still streams', async () => {
    const response = await get(CORE_EVENT, { ...svc.adminHeaders, accept: 'text/event-stream' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const id = await record(svc.db.database.db, {
      workspaceId: svc.workspace.id,
      name: 'contact.created',
      subjectId: svc.admin.id,
      actorUserId: svc.admin.id,
      data: { id: svc.admin.id, name: 'Ada' },
    });
    expect(await firstNext(response)).toMatchObject({
      data: { coreEvent: { id, name: 'contact.created' } },
    });
  });

  test('a mutation is refused even when it asks for a stream, and changes nothing', async () => {
    const response = await get('mutation { setLocale(locale: "de-DE") }', {
      ...svc.adminHeaders,
      accept: 'text/event-stream',
    });
    expect(response.status).toBe(405);
    await response.body?.cancel();
    const { body } = await svc.graph('{ locale }');
    expect(body.data?.locale).not.toBe('de-DE');
  });
});
