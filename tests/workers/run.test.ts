// Untrusted input runs on a worker thread held to a heap and a time limit: a hostile one is
// stopped and named, and the calling thread keeps running meanwhile.
import { describe, expect, test } from '@jest/globals';
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

  test('the calling thread keeps running while a worker spins', async () => {
    let settled = false;
    const spinning = failureOf('spin').then((failure) => {
      settled = true;
      return failure;
    });
    // Work queued on this thread runs while the worker is still busy.
    const ran = await new Promise<boolean>((resolve) => setImmediate(() => resolve(true)));
    expect({ ran, settled }).toEqual({ ran: true, settled: false });
    expect(await spinning).toBe('time');
  });
});
