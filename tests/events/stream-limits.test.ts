import { describe, expect, test } from '@jest/globals';
import { startTestService, useTestService, type TestService } from '../support/service.js';
import { openStream, record, type SseStream } from './sse.js';

/**
 * Opens a stream, trying again while the server still counts the slot a client just gave
 * up: the server frees it when it sees the connection close, which the client cannot
 * observe. Bounded; each try waits on the previous answer, not on a timer.
 */
async function openWhenFreed(svc: TestService): Promise<SseStream> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const stream = await openStream(svc, svc.adminHeaders);
    if (stream.status !== 429) return stream;
    await stream.ended;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the slot was never freed');
}

describe('stream slots (SVC_STREAMS_PER_USER=1)', () => {
  const service = useTestService({ env: { SVC_STREAMS_PER_USER: '1' } });

  test('a second stream is refused with 429 and Retry-After until the first disconnects', async () => {
    const svc = service();
    const first = await openStream(svc, svc.adminHeaders);
    expect(first.status).toBe(200);

    const second = await openStream(svc, svc.adminHeaders);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toMatch(/^\d+$/);
    await second.ended;

    // Ordinary operations use their own slots meanwhile.
    const me = await svc.graph('{ me { id } }');
    expect(me.body.errors).toBeUndefined();

    // The slot is held for the stream's whole life: it still works, and still excludes.
    await record(svc.db.database.db, { workspaceId: svc.workspace.id, name: 'contact.created' });
    expect((await first.next()).data?.coreEvent).toMatchObject({ name: 'contact.created' });
    const third = await openStream(svc, svc.adminHeaders);
    expect(third.status).toBe(429);
    await third.ended;

    first.close();
    await first.ended;
    const again = await openWhenFreed(svc);
    expect(again.status).toBe(200);
    await record(svc.db.database.db, { workspaceId: svc.workspace.id, name: 'contact.renamed' });
    expect((await again.next()).data?.coreEvent).toMatchObject({ name: 'contact.renamed' });
    again.close();
    await again.ended;
    expect(svc.service.events.size()).toBeLessThanOrEqual(1);
  });
});

describe('stream lifetime (SVC_STREAM_LIFETIME=500ms)', () => {
  const service = useTestService({
    env: { SVC_STREAM_LIFETIME: '500ms', SVC_STREAMS_PER_USER: '1' },
  });

  test('the server completes the stream after its lifetime and frees the slot', async () => {
    const svc = service();
    const started = Date.now();
    const stream = await openStream(svc, svc.adminHeaders);
    expect(stream.status).toBe(200);
    expect(await stream.frame()).toEqual({ event: 'complete', data: '' });
    await stream.ended;
    const lived = Date.now() - started;
    expect(lived).toBeGreaterThanOrEqual(450);
    expect(lived).toBeLessThan(5000);

    const next = await openWhenFreed(svc);
    expect(next.status).toBe(200);
    next.close();
    await next.ended;
  });
});

describe('shutdown', () => {
  test('open streams complete when shutdown starts, not at the cancel grace', async () => {
    const svc = await startTestService({
      env: { SVC_SHUTDOWN_GRACE: '20s', SVC_SHUTDOWN_CANCEL_GRACE: '20s' },
    });
    const stream = await openStream(svc, svc.adminHeaders);
    expect(stream.status).toBe(200);
    const started = Date.now();
    const stopped = svc.stop();
    expect(await stream.frame()).toEqual({ event: 'complete', data: '' });
    await stream.ended;
    await stopped;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(svc.service.events.size()).toBe(0);
  });
});
