// Untrusted input runs on a worker thread held to a heap and a time limit: a hostile one is
// stopped and named, and the request thread keeps answering meanwhile.
import { describe, expect, test } from '@jest/globals';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { runInWorker, WorkerLimitError } from '../../src/workers/run.js';

const hostile = new URL('../fixtures/workers/hostile.mjs', import.meta.url);
const limits = { maxMemoryMb: 64, timeoutMs: 2_000 };

async function failureOf(input: string): Promise<string> {
  try {
    await runInWorker(hostile, input, limits);
    return 'answered';
  } catch (error) {
    return error instanceof WorkerLimitError ? error.failure : String(error);
  }
}

describe('runInWorker', () => {
  test('answers what the worker posts', async () => {
    await expect(runInWorker(hostile, 'answer', limits)).resolves.toEqual({ echoed: 'answer' });
  });

  test('stops a worker past its heap, one past its time and one that throws', async () => {
    expect(await failureOf('hog')).toBe('memory');
    expect(await failureOf('spin')).toBe('time');
    expect(await failureOf('throw')).toBe('crashed');
  });

  test('the calling thread keeps its event loop while a worker spins', async () => {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    expect(await failureOf('spin')).toBe('time');
    delay.disable();
    // The whole 2 s spin cost this thread no stall longer than a fraction of a second.
    expect(delay.max / 1e6).toBeLessThan(500);
  });
});
