import { basename } from 'node:path';
import { boundedLabel, workerDuration, workerRuns, workersRunning } from '../metrics/registry.js';
import { spawn } from 'node:child_process';
import { channel } from 'node:diagnostics_channel';
import { readFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { deserialize, serialize } from 'node:v8';
import type { Config } from '../config.js';
import type { Context } from '../context.js';
import { refuse, seconds, type AppError } from '../errors.js';

// Untrusted input (an uploaded spreadsheet) is parsed in a child process of its own, never
// on a worker thread: V8 ends the whole process when any isolate in it, a worker thread's
// included, meets a fatal out-of-memory (nodejs/node#47224; a 103 KB .xlsx did it through
// `resourceLimits`), and ArrayBuffers such a parse inflates are outside any heap limit. A
// child's fatal error ends only the child. The process holds the child to a heap limit
// (--max-old-space-size), to a resident-memory cap it watches (/proc, on Linux), to a time
// and to a bound on the answer it reads back; and the pool below bounds how many children
// run at once, per process and per workspace (SVC_WORKERS, SVC_WORKERS_PER_WORKSPACE).
// docs/decisions.md "Untrusted parsing runs in a child process".

/**
 * Published with `{ file }` when a worker process starts running its module: tracing (and
 * the tests) can see untrusted input being parsed while the request thread goes on.
 */
export const workerOnline = channel('svc:worker:online');

/** Why a worker gave no answer: past its memory, its time or its answer bound, or it failed. */
export type WorkerFailure = 'memory' | 'time' | 'answer' | 'crashed';

export class WorkerLimitError extends Error {
  constructor(readonly failure: WorkerFailure) {
    super(`worker stopped: ${failure}`);
  }
}

export interface WorkerLimits {
  /**
   * Memory the worker process may hold, in MiB: its resident size (heap, buffers, code),
   * its JavaScript heap held to three quarters of it. Never more than SVC_WORKER_MEMORY_MAX.
   */
  maxMemoryMb: number;
  /** Time the worker may take, in milliseconds; past it the worker is stopped. */
  timeoutMs: number;
  /** Bytes of answer (v8-serialized) the caller takes back; past it the worker is stopped. */
  maxAnswerBytes: number;
}

/** The process's bounds on workers (SVC_WORKERS…), `Config['workers']`. */
export interface WorkerSettings {
  /** Workers running at once in this process. */
  processes: number;
  /** Workers running at once for one workspace. */
  perWorkspace: number;
  /** Longest a call waits for a worker before it is refused. */
  waitMs: number;
  /** Most memory any one worker may hold, in bytes. */
  memoryMaxBytes: number;
}

const HOST = new URL('./host.mjs', import.meta.url);
const MIB = 1024 * 1024;
/** How often a worker's resident size is read. */
const WATCH_MS = 25;
/** Bytes of a worker's stderr kept, to tell a fatal out-of-memory from another failure. */
const STDERR_KEPT = 4096;
const OUT_OF_MEMORY = /heap out of memory|Reached heap limit|Allocation failed/;

/** The resident size of process `pid` in bytes, or null where /proc does not say. */
async function residentBytes(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kib === undefined ? null : Number(kib) * 1024;
  } catch {
    return null;
  }
}

/**
 * Runs `file`'s default export on `input` in a child process held to `limits`, without any
 * bound on concurrency (callers go through `runInWorker`, or a pool of their own). The
 * module is plain JavaScript; its export takes the input and returns (or resolves) the
 * answer; both cross as v8-serialized values (strings, numbers, arrays, objects, typed
 * arrays). Rejects with `WorkerLimitError` when the worker passes a limit or fails, and
 * with `signal`'s reason when the signal aborts; the child is killed either way.
 */
export function runIsolated<O>(
  file: URL,
  input: unknown,
  limits: WorkerLimits,
  signal?: AbortSignal,
): Promise<O> {
  signal?.throwIfAborted();
  const heapMb = Math.max(16, Math.floor((limits.maxMemoryMb * 3) / 4));
  const child = spawn(
    process.execPath,
    [`--max-old-space-size=${heapMb}`, '--max-semi-space-size=8', HOST.pathname],
    // Nothing of the service's environment (its database URL, its keys) reaches the child.
    { env: {}, stdio: ['pipe', 'ignore', 'pipe', 'pipe'] },
  );
  return new Promise<O>((resolve, reject) => {
    const answer: Buffer[] = [];
    let answerBytes = 0;
    let stderr = '';
    let stoppedFor: WorkerFailure | null = null;
    let settled = false;
    const stop = (failure: WorkerFailure) => {
      stoppedFor ??= failure;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop('time'), limits.timeoutMs);
    const watch = setInterval(() => {
      if (child.pid === undefined || child.exitCode !== null) return;
      void residentBytes(child.pid).then((bytes) => {
        if (bytes === null) clearInterval(watch);
        else if (bytes > limits.maxMemoryMb * MIB) stop('memory');
      });
    }, WATCH_MS);
    const onAbort = () => {
      child.kill('SIGKILL');
      finish(() => reject(signal!.reason));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    function finish(outcome: () => void) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(watch);
      signal?.removeEventListener('abort', onAbort);
      outcome();
    }
    child.once('spawn', () => {
      // The serving process comes first when both want a core.
      try {
        if (child.pid !== undefined) setPriority(child.pid, 10);
      } catch {
        // Not allowed here (some containers): the child runs at the same priority.
      }
      if (workerOnline.hasSubscribers) workerOnline.publish({ file: file.href });
    });
    child.stdin!.on('error', () => {}); // a child that dies early closes its stdin
    child.stdin!.end(serialize({ file: file.href, input }));
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < STDERR_KEPT) stderr += chunk.toString('utf8', 0, STDERR_KEPT);
    });
    const out = child.stdio[3] as NodeJS.ReadableStream;
    out.on('data', (chunk: Buffer) => {
      if (stoppedFor) return;
      answerBytes += chunk.length;
      if (answerBytes > limits.maxAnswerBytes) {
        answer.length = 0;
        stop('answer');
      } else answer.push(chunk);
    });
    out.on('error', () => {});
    child.once('error', () => finish(() => reject(new WorkerLimitError('crashed'))));
    child.once('close', (code, killedBy) => {
      if (stoppedFor) return finish(() => reject(new WorkerLimitError(stoppedFor!)));
      if (code !== 0 || answer.length === 0) {
        const memory = killedBy === 'SIGABRT' || OUT_OF_MEMORY.test(stderr);
        return finish(() => reject(new WorkerLimitError(memory ? 'memory' : 'crashed')));
      }
      try {
        const value = deserialize(Buffer.concat(answer, answerBytes)) as O;
        finish(() => resolve(value));
      } catch {
        finish(() => reject(new WorkerLimitError('crashed')));
      }
    });
  });
}

interface Waiter {
  key: string;
  grant(): void;
}

/**
 * Bounds the workers of one process: at most `processes` run at once and at most
 * `perWorkspace` for one workspace. A call over either waits its turn, first come first
 * served among those that may run, for at most `waitMs`; at most twice `perWorkspace`
 * calls of one workspace wait. A call that cannot wait is refused `rate_limited`, meta
 * `{ retryAfter, limit, max }` naming the bound.
 */
export class WorkerPool {
  private running = 0;
  private readonly runningFor = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly settings: WorkerSettings,
    private readonly retryAfterSeconds: number,
  ) {}

  /** Runs `file` on `input` (`runIsolated`) once the bounds let `key`'s call run. */
  async run<O>(
    key: string,
    file: URL,
    input: unknown,
    limits: WorkerLimits,
    signal?: AbortSignal,
  ): Promise<O> {
    const release = await this.take(key, signal);
    const memoryMb = Math.min(limits.maxMemoryMb, this.settings.memoryMaxBytes / MIB);
    const done = countRun(file);
    try {
      const output = await runIsolated<O>(
        file,
        input,
        { ...limits, maxMemoryMb: memoryMb },
        signal,
      );
      done('ok');
      return output;
    } catch (error) {
      done(error instanceof WorkerLimitError ? error.failure : 'stopped');
      throw error;
    } finally {
      release();
    }
  }

  /** How many workers run now, in all and for `key`. */
  load(key: string): { running: number; mine: number } {
    return { running: this.running, mine: this.runningFor.get(key) ?? 0 };
  }

  private mayRun(key: string): boolean {
    return (
      this.running < this.settings.processes &&
      (this.runningFor.get(key) ?? 0) < this.settings.perWorkspace
    );
  }

  private start(key: string): () => void {
    this.running += 1;
    this.runningFor.set(key, (this.runningFor.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      const left = (this.runningFor.get(key) ?? 1) - 1;
      if (left === 0) this.runningFor.delete(key);
      else this.runningFor.set(key, left);
      this.next();
    };
  }

  /** Starts the first waiter the bounds now let run. */
  private next(): void {
    const index = this.waiting.findIndex((waiter) => this.mayRun(waiter.key));
    if (index < 0) return;
    const [waiter] = this.waiting.splice(index, 1);
    waiter!.grant();
  }

  private refusal(key: string): AppError {
    const own = (this.runningFor.get(key) ?? 0) >= this.settings.perWorkspace;
    const max = own ? this.settings.perWorkspace : this.settings.processes;
    const retryAfter = this.retryAfterSeconds;
    const meta = { retryAfter, limit: own ? 'workers_per_workspace' : 'workers', max };
    return refuse('rate_limited', meta, {
      message:
        `too many files are being read ${own ? 'for this workspace' : 'on this server'}: ` +
        `at most ${max} at once; try again in ${seconds(retryAfter)}`,
      extensions: { retryAfter },
    });
  }

  private take(key: string, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.mayRun(key) && !this.waiting.some((waiter) => waiter.key === key)) {
      return Promise.resolve(this.start(key));
    }
    const queued = this.waiting.filter((waiter) => waiter.key === key).length;
    if (queued >= 2 * this.settings.perWorkspace) return Promise.reject(this.refusal(key));
    return new Promise((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
      };
      const waiter: Waiter = {
        key,
        grant: () => {
          leave();
          resolve(this.start(key));
        },
      };
      const timer = setTimeout(() => {
        leave();
        reject(this.refusal(key));
      }, this.settings.waitMs);
      const onAbort = () => {
        leave();
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }
}

/** Starts counting a run of `file` (`parse.worker` for `parse.worker.mjs`); answers its end. */
function countRun(file: URL): (outcome: string) => void {
  const worker = workerLabel(basename(file.pathname).replace(/\.[cm]?js$/, ''));
  const startedAt = performance.now();
  workersRunning.inc();
  return (outcome) => {
    workersRunning.dec();
    workerRuns.inc({ worker, outcome });
    workerDuration.observe({ worker }, (performance.now() - startedAt) / 1000);
  };
}

const workerLabel = boundedLabel(20);

/** One pool per process configuration (tests start several services in one process). */
const pools = new WeakMap<Config['workers'], WorkerPool>();

/** The pool `config` describes, made on first use. */
export function workerPool(config: Config): WorkerPool {
  let pool = pools.get(config.workers);
  if (!pool) {
    pool = new WorkerPool(config.workers, Math.max(1, Math.ceil(config.graph.retryAfterMs / 1000)));
    pools.set(config.workers, pool);
  }
  return pool;
}

/**
 * Runs `file`'s default export on `input` in a worker process held to `limits`, counted
 * against the process's and the caller's workspace's worker bounds (SVC_WORKERS,
 * SVC_WORKERS_PER_WORKSPACE, docs/plugins.md): untrusted input (an uploaded spreadsheet)
 * is parsed there, so a hostile one costs that process's memory and time, never the
 * serving process's. A worker past a limit, or one that fails, rejects with
 * `WorkerLimitError`; a call the bounds keep waiting past SVC_WORKER_WAIT is refused
 * `rate_limited`; the request's end (its deadline, the client leaving) stops the worker.
 */
export function runInWorker<O>(
  ctx: Pick<Context, 'config' | 'workspaceId' | 'signal'>,
  file: URL,
  input: unknown,
  limits: WorkerLimits,
): Promise<O> {
  const key = ctx.workspaceId ?? 'anonymous';
  return workerPool(ctx.config).run<O>(key, file, input, limits, ctx.signal);
}
