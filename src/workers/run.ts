import { channel } from 'node:diagnostics_channel';
import { Worker } from 'node:worker_threads';

/**
 * Published with `{ file }` when a worker starts running its module: tracing (and the
 * tests) can see untrusted input being parsed while the request thread goes on.
 */
export const workerOnline = channel('svc:worker:online');

/** Why a worker gave no answer. */
export type WorkerFailure = 'memory' | 'time' | 'crashed';

export class WorkerLimitError extends Error {
  constructor(readonly failure: WorkerFailure) {
    super(`worker stopped: ${failure}`);
  }
}

export interface WorkerLimits {
  /** Heap the worker may use, in MiB; past it the worker is stopped. */
  maxMemoryMb: number;
  /** Time the worker may take, in milliseconds; past it the worker is stopped. */
  timeoutMs: number;
}

/**
 * Runs `file`, a JavaScript module that posts one answer for its `workerData`, on a
 * worker thread held to `limits`: untrusted input (an uploaded spreadsheet) is parsed
 * there, so a hostile one costs its own heap and time, never the request thread's. A
 * worker past its heap or its time is stopped and the promise rejects with
 * `WorkerLimitError`; so does one that throws or exits without answering.
 */
export function runInWorker<O>(file: URL, input: unknown, limits: WorkerLimits): Promise<O> {
  return new Promise<O>((resolve, reject) => {
    const worker = new Worker(file, {
      workerData: input,
      resourceLimits: {
        maxOldGenerationSizeMb: limits.maxMemoryMb,
        maxYoungGenerationSizeMb: Math.max(4, Math.floor(limits.maxMemoryMb / 8)),
      },
      // A module file runs as plain JavaScript: no loader of the parent's is needed.
      execArgv: [],
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      outcome();
    };
    const timer = setTimeout(
      () => finish(() => reject(new WorkerLimitError('time'))),
      limits.timeoutMs,
    );
    worker.once('online', () => {
      if (workerOnline.hasSubscribers) workerOnline.publish({ file: file.href });
    });
    worker.once('message', (answer: O) => finish(() => resolve(answer)));
    worker.once('error', (error: Error & { code?: string }) =>
      finish(() =>
        reject(
          new WorkerLimitError(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : 'crashed'),
        ),
      ),
    );
    worker.once('exit', () => finish(() => reject(new WorkerLimitError('crashed'))));
  });
}
