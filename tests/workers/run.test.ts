// Untrusted input runs in a worker process held to memory, time and answer limits: a
// hostile one is stopped and named, a fatal out-of-memory ends only the worker, and the
// pool bounds how many run at once, per process and per workspace.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import {
  runInWorker,
  runIsolated,
  streamInWorker,
  streamIsolated,
  WorkerLimitError,
  WorkerPool,
  workerBatch,
  type WorkerLimits,
  type WorkerSettings,
} from '../../src/workers/run.js';

const hostile = new URL('../fixtures/workers/hostile.mjs', import.meta.url);
const batches = new URL('../fixtures/workers/batches.mjs', import.meta.url);
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

type Batch = { index: number; text: string };

const scratch = mkdtempSync(path.join(tmpdir(), 'svc-worker-batches-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let logs = 0;

/** How many batches the worker made so far, by its log. */
const made = (log: string) => readFileSync(log, 'utf8').split('\n').filter(Boolean).length;

/** Every batch of a worker answering in batches, or the failure that stopped it. */
async function batchesOf(input: object, held: WorkerLimits = limits) {
  const taken: number[] = [];
  try {
    for await (const batch of streamIsolated<Batch>(batches, input, held)) taken.push(batch.index);
    return { taken };
  } catch (error) {
    return { taken, failure: error instanceof WorkerLimitError ? error.failure : String(error) };
  }
}

describe('streamIsolated: an answer in batches', () => {
  test('each batch is made only when the caller asks for it, so the caller holds one', async () => {
    const log = path.join(scratch, `log-${(logs += 1)}`);
    const delivered: number[] = [];
    const onBatch = (message: unknown) => delivered.push((message as { bytes: number }).bytes);
    workerBatch.subscribe(onBatch);
    const seen: { index: number; madeSoFar: number }[] = [];
    try {
      for await (const batch of streamIsolated<Batch>(batches, { count: 4, log }, limits)) {
        // The worker waits for the next ask: it has made exactly the batches handed over.
        seen.push({ index: batch.index, madeSoFar: made(log) });
      }
    } finally {
      workerBatch.unsubscribe(onBatch);
    }
    expect(seen).toEqual([0, 1, 2, 3].map((index) => ({ index, madeSoFar: index + 1 })));
    expect(delivered).toHaveLength(4);
  });

  test('leaving the loop early stops the worker: it makes nothing more', async () => {
    const log = path.join(scratch, `log-${(logs += 1)}`);
    for await (const batch of streamIsolated<Batch>(batches, { count: 10, log }, limits)) {
      if (batch.index === 1) break;
    }
    expect(made(log)).toBe(2);
  });

  test('a batch past maxBatchBytes, or all of them past maxAnswerBytes, is never taken', async () => {
    const bounded = { ...limits, maxBatchBytes: 4 * 1024, maxAnswerBytes: 16 * 1024 };
    expect(await batchesOf({ count: 2, bytes: 1000 }, bounded)).toEqual({ taken: [0, 1] });
    expect(await batchesOf({ count: 2, bytes: 8 * 1024 }, bounded)).toEqual({
      taken: [],
      failure: 'answer',
    });
    // Each under the batch bound, together past the answer's.
    expect(await batchesOf({ count: 10, bytes: 3 * 1024 }, bounded)).toMatchObject({
      failure: 'answer',
    });
  });

  test('an attachment streams to the worker as its input, exactly the size it says', async () => {
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
    const attached = (file: { size: number; stream(): ReadableStream<Uint8Array> }) =>
      streamIsolated<Batch & { attached?: { length: number; sum: number } }>(
        batches,
        { count: 2 },
        limits,
        undefined,
        { key: 'data', file },
      );
    const all = async (file: Parameters<typeof attached>[0]) => {
      const seen = [];
      for await (const batch of attached(file)) seen.push(batch.attached);
      return seen;
    };
    const seen = await all(new Blob([bytes]));
    const whole = { length: bytes.length, sum: bytes.length * 7 };
    expect(seen).toEqual([whole, whole]);
    // A file yielding more than its size is cut at it.
    const longer = { size: 10, stream: () => new Blob([bytes]).stream() };
    expect((await all(longer))[0]).toEqual({ length: 10, sum: 70 });
    // One yielding less leaves the worker's input short: it fails, never waits.
    const shorter = { size: bytes.length + 1, stream: () => new Blob([bytes]).stream() };
    await expect(all(shorter)).rejects.toThrow(WorkerLimitError);
  });

  test('a worker writing more than it was asked for is stopped', async () => {
    expect(await batchesOf({ count: 3, unasked: true })).toEqual({ taken: [], failure: 'answer' });
  });

  test('the time limit counts the worker’s own time, never the caller’s on a batch', async () => {
    const quick = { ...limits, timeoutMs: 3_000 };
    const taken: number[] = [];
    for await (const batch of streamIsolated<Batch>(batches, { count: 2 }, quick)) {
      // The caller holds the first batch past the worker's whole time.
      if (batch.index === 0) await new Promise((resolve) => setTimeout(resolve, 3_500));
      taken.push(batch.index);
    }
    expect(taken).toEqual([0, 1]);
    expect(await batchesOf({ count: 3, spinAt: 1 }, { ...limits, timeoutMs: 500 })).toEqual({
      taken: [0],
      failure: 'time',
    });
  });

  test('streamInWorker holds its place in the pool until the last batch is taken', async () => {
    const { config } = loadConfig({ SVC_WORKERS: '1', SVC_WORKER_WAIT: '100ms' });
    const signal = new AbortController().signal;
    const ctx = { config, workspaceId: 'a', signal };
    const stream = streamInWorker<Batch>(ctx, batches, { count: 2 }, limits);
    expect(await stream.next()).toMatchObject({ value: { index: 0 } });
    const refused = runInWorker({ ...ctx, workspaceId: 'b' }, hostile, 'answer', limits);
    await expect(refused).rejects.toMatchObject({ reason: 'rate_limited' });
    expect(await stream.next()).toMatchObject({ value: { index: 1 } });
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    await expect(
      runInWorker({ ...ctx, workspaceId: 'b' }, hostile, 'answer', limits),
    ).resolves.toEqual({ echoed: 'answer' });
  });
});
