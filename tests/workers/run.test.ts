// Untrusted input runs in a worker process held to memory, time and answer limits: a
// hostile one is stopped and named, a fatal out-of-memory ends only the worker, and the
// pool bounds how many run at once, per process and per workspace.
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import {
  runInWorker,
  runIsolated,
  WorkerLimitError,
  WorkerPool,
  type WorkerSettings,
} from '../../src/workers/run.js';

const hostile = new URL('../fixtures/workers/hostile.mjs', import.meta.url);
const limits = { maxMemoryMb: 96, timeoutMs: 5_000, maxAnswerBytes: 64 * 1024 };

async function failureOf(input: unknown, held = limits): Promise<string> {
  try {
    await runIsolated(hostile, input, held);
    return 'answered';
  } catch (error) {
    return error instanceof WorkerLimitError ? error.failure : String(error);
  }
}

describe('runIsolated', () => {
  test('answers what the module’s default export returns or resolves', async () => {
    await expect(runIsolated(hostile, 'answer', limits)).resolves.toEqual({ echoed: 'answer' });
    await expect(runIsolated(hostile, { sleepMs: 10 }, limits)).resolves.toBe('slept');
  });

  test('stops a worker past its heap, its buffers, its time, and one that fails', async () => {
    expect(await failureOf('hog')).toBe('memory');
    // Buffers are outside the JavaScript heap: the resident-size watch stops them.
    expect(await failureOf('buffers')).toBe('memory');
    expect(await failureOf('spin', { ...limits, timeoutMs: 500 })).toBe('time');
    expect(await failureOf('throw')).toBe('crashed');
    expect(await failureOf('exit')).toBe('crashed');
  });

  test('a fatal out-of-memory ends the worker only; this process goes on', async () => {
    // On a worker thread this aborted the whole process (nodejs/node#47224).
    // Its heap (3/4 of 256 MiB) runs out before its resident size reaches the watch's cap.
    expect(await failureOf('fatal', { ...limits, maxMemoryMb: 256 })).toBe('memory');
    expect(process.exitCode ?? 0).toBe(0);
  });

  test('an answer past its bound is never taken', async () => {
    await expect(runIsolated(hostile, { answerBytes: 1000 }, limits)).resolves.toHaveLength(1000);
    expect(await failureOf({ answerBytes: 1024 * 1024 })).toBe('answer');
  });

  test('the calling thread keeps running while a worker spins, and its signal stops it', async () => {
    const controller = new AbortController();
    let settled = false;
    const spinning = runIsolated(hostile, 'spin', limits, controller.signal).finally(
      () => (settled = true),
    );
    const ran = await new Promise<boolean>((resolve) => setImmediate(() => resolve(true)));
    expect({ ran, settled }).toEqual({ ran: true, settled: false });
    controller.abort(new Error('client left'));
    await expect(spinning).rejects.toThrow('client left');
  });
});

const settings: WorkerSettings = {
  processes: 2,
  perWorkspace: 1,
  waitMs: 30_000,
  memoryMaxBytes: 512 * 1024 * 1024,
};

/** A pool call that reports when its worker starts (the fixture sleeps `sleepMs`). */
function sleeper(pool: WorkerPool, key: string, sleepMs: number) {
  return pool.run<string>(key, hostile, { sleepMs }, limits);
}

describe('WorkerPool', () => {
  test('runs at most one worker per workspace and two per process; the rest wait their turn', async () => {
    const pool = new WorkerPool(settings, 1);
    const loads: { running: number; mine: number }[] = [];
    const first = sleeper(pool, 'a', 300);
    const second = sleeper(pool, 'a', 10);
    const other = sleeper(pool, 'b', 300);
    const third = sleeper(pool, 'c', 10);
    loads.push(pool.load('a'), pool.load('c'));
    await Promise.all([first, second, other, third]);
    loads.push(pool.load('a'));
    expect(loads).toEqual([
      { running: 2, mine: 1 },
      { running: 2, mine: 0 },
      { running: 0, mine: 0 },
    ]);
  });

  test('a workspace past its waiting room, or waiting past SVC_WORKER_WAIT, is refused rate_limited', async () => {
    const pool = new WorkerPool({ ...settings, waitMs: 200 }, 1);
    const running = sleeper(pool, 'a', 2_000);
    const waiting = [sleeper(pool, 'a', 10), sleeper(pool, 'a', 10)];
    const refused = sleeper(pool, 'a', 10);
    await expect(refused).rejects.toMatchObject({
      reason: 'rate_limited',
      meta: { retryAfter: 1, limit: 'workers_per_workspace', max: 1 },
    });
    for (const call of waiting) {
      await expect(call).rejects.toMatchObject({ reason: 'rate_limited' });
    }
    // Another workspace is not held up by the first one's queue.
    await expect(sleeper(pool, 'b', 10)).resolves.toBe('slept');
    await expect(running).resolves.toBe('slept');
  });

  test('runInWorker counts against the pool of the context’s configuration and workspace', async () => {
    const { config } = loadConfig({ SVC_WORKERS: '1', SVC_WORKER_WAIT: '100ms' });
    const signal = new AbortController().signal;
    const slow = runInWorker(
      { config, workspaceId: 'a', signal },
      hostile,
      { sleepMs: 1_000 },
      limits,
    );
    const refused = runInWorker({ config, workspaceId: 'b', signal }, hostile, 'answer', limits);
    await expect(refused).rejects.toMatchObject({
      reason: 'rate_limited',
      meta: { limit: 'workers', max: 1 },
    });
    await expect(slow).resolves.toBe('slept');
  });
});
