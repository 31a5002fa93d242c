import { basename } from 'node:path';
import { boundedLabel, workerDuration, workerRuns, workersRunning } from '../metrics/registry.js';
import { spawn, type ChildProcess } from 'node:child_process';
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
  /**
   * Time the worker may take, in milliseconds; past it the worker is stopped. Of a worker
   * answering in batches, only the time it works counts: from its start to its first
   * batch, and from each ask to the batch, never the time the caller spends on a batch.
   */
  timeoutMs: number;
  /**
   * Bytes of answer (v8-serialized) the caller takes back, all batches together; past it
   * the worker is stopped.
   */
  maxAnswerBytes: number;
  /** Bytes of one batch (`streamInWorker`), at most `maxAnswerBytes`; past it, stopped. */
  maxBatchBytes?: number;
}

/**
 * Bytes a worker's input takes from a file as it is sent, never copied whole into the
 * serving process's memory: the worker's export finds them in `input[key]` (a Buffer).
 * `file` must yield exactly `size` bytes; one that yields fewer or more fails the worker.
 */
export interface WorkerAttachment {
  key: string;
  file: { size: number; stream(): ReadableStream<Uint8Array> };
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
/** One frame's length, before its bytes (host.mjs). */
const FRAME_HEAD = 4;
/** What a worker in batches is sent to ask for its next batch. */
const ASK = Buffer.from([1]);

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

/** The head of a frame of `body`: its length. */
function frameHead(body: Buffer): Buffer {
  const head = Buffer.alloc(FRAME_HEAD);
  head.writeUInt32BE(body.length);
  return head;
}

/**
 * Published with `{ file, bytes }` each time a worker answering in batches hands the caller
 * a batch (`bytes` its serialized size): the caller holds it until it asks for the next.
 */
export const workerBatch = channel('svc:worker:batch');

/**
 * One worker process running `file` on `input`, held to `limits`: its answer read back a
 * frame at a time. With `batches`, each frame is asked for only when the caller takes the
 * next (`next()`), so the caller holds at most one; without, the one answer is asked for
 * at the start. The worker is killed when it passes a limit, when `signal` aborts, and by
 * `close()`.
 */
class IsolatedWorker<O> {
  private readonly child: ChildProcess;
  private readonly timer = { left: 0, since: 0, handle: undefined as NodeJS.Timeout | undefined };
  private readonly watch: NodeJS.Timeout;
  private readonly maxFrame: number;
  /** Bytes of the frame being read (its head first). */
  private held: Buffer[] = [];
  private heldBytes = 0;
  private frameBytes: number | null = null;
  private answerBytes = 0;
  private stderr = '';
  private stoppedFor: WorkerFailure | null = null;
  /** Why no more can be read (the worker ended, failed or was stopped), once known. */
  private ended: Error | null = null;
  private finished = false;
  /** The caller waiting for the frame asked for, if one is. */
  private waiting: {
    resolve(result: IteratorResult<O, undefined>): void;
    reject(error: unknown): void;
  } | null = null;
  private asked = false;
  /** The frame that arrived before `next()` was called (only ever the first). */
  private ready: IteratorResult<O, undefined> | null = null;
  private readonly onAbort = () => this.fail(this.signal!.reason);

  constructor(
    private readonly file: URL,
    input: unknown,
    private readonly limits: WorkerLimits,
    private readonly batches: boolean,
    private readonly signal?: AbortSignal,
    attachment?: WorkerAttachment,
  ) {
    signal?.throwIfAborted();
    this.maxFrame = Math.min(limits.maxBatchBytes ?? Infinity, limits.maxAnswerBytes);
    const heapMb = Math.max(16, Math.floor((limits.maxMemoryMb * 3) / 4));
    this.child = spawn(
      process.execPath,
      [`--max-old-space-size=${heapMb}`, '--max-semi-space-size=8', HOST.pathname],
      // Nothing of the service's environment (its database URL, its keys) reaches the child.
      { env: {}, stdio: ['pipe', 'ignore', 'pipe', 'pipe'] },
    );
    const { child } = this;
    this.watch = setInterval(() => {
      if (child.pid === undefined || child.exitCode !== null) return;
      void residentBytes(child.pid).then((bytes) => {
        if (bytes === null) clearInterval(this.watch);
        else if (bytes > limits.maxMemoryMb * MIB) this.stop('memory');
      });
    }, WATCH_MS);
    signal?.addEventListener('abort', this.onAbort, { once: true });
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
    const attach = attachment && { key: attachment.key, bytes: attachment.file.size };
    const start = serialize({ file: file.href, input, batches, attach });
    // Written as it is, the head before it, never copied into one buffer: the input may be
    // a file of megabytes, and each copy was one more of it held while the worker starts.
    child.stdin!.write(frameHead(start));
    child.stdin!.write(start);
    // The first frame (the answer, or the first batch) is asked for at once, after the
    // attached bytes if there are any.
    if (attachment) void this.send(attachment.file);
    else if (batches) child.stdin!.write(ASK);
    else child.stdin!.end();
    this.timer.left = limits.timeoutMs;
    this.ask(false);
    child.stderr!.on('data', (chunk: Buffer) => {
      if (this.stderr.length < STDERR_KEPT) this.stderr += chunk.toString('utf8', 0, STDERR_KEPT);
    });
    const out = child.stdio[3] as NodeJS.ReadableStream;
    out.on('data', (chunk: Buffer) => this.read(chunk));
    out.on('error', () => {});
    child.once('error', () => this.fail(new WorkerLimitError('crashed')));
    child.once('close', (code, killedBy) => {
      if (this.stoppedFor) return this.fail(new WorkerLimitError(this.stoppedFor));
      void code;
      if (this.finished) return;
      // A worker that ends without its answer: out of memory, or failed.
      const memory = killedBy === 'SIGABRT' || OUT_OF_MEMORY.test(this.stderr);
      this.fail(new WorkerLimitError(memory ? 'memory' : 'crashed'));
    });
  }

  /**
   * The next frame: the answer, or the next batch (`done` once the worker has no more).
   * In batches, a frame is asked for only here, so the caller holds one at most.
   */
  next(): Promise<IteratorResult<O, undefined>> {
    if (this.waiting) return Promise.reject(new Error('the worker is already asked'));
    const ready = this.ready;
    this.ready = null;
    if (ready) return Promise.resolve(ready);
    if (this.finished) return Promise.resolve({ done: true, value: undefined });
    if (this.ended) return Promise.reject(this.ended);
    if (!this.asked) this.ask(true);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  /** Kills the worker, if it still runs; nothing more is read. */
  close(): void {
    this.finished = true;
    this.end();
  }

  /**
   * Streams an attachment's bytes to the worker, as the pipe takes them, then asks for the
   * first frame. A file yielding more bytes than it said is cut there; one yielding fewer
   * leaves the worker's input short (stdin closed), which fails it.
   */
  private async send(file: WorkerAttachment['file']): Promise<void> {
    const stdin = this.child.stdin!;
    let left = file.size;
    const reader = file.stream().getReader();
    try {
      for (;;) {
        const { value: chunk, done } = await reader.read();
        if (done) break;
        if (this.ended || this.finished || left === 0) {
          void reader.cancel().catch(() => {});
          break;
        }
        const part = chunk.byteLength > left ? chunk.subarray(0, left) : chunk;
        left -= part.byteLength;
        if (!stdin.write(part)) {
          await new Promise<void>((resolve) => {
            const go = () => {
              stdin.off('drain', go);
              stdin.off('close', go);
              resolve();
            };
            stdin.once('drain', go);
            stdin.once('close', go);
          });
        }
      }
    } catch {
      left = Math.max(left, 1); // unreadable: the worker's input stays short
    }
    if (this.ended || this.finished) return;
    if (left > 0) stdin.end();
    else if (this.batches) stdin.write(ASK);
    else stdin.end();
  }

  /** Asks for a frame (`send`: over stdin, after the first) and runs the worker's clock. */
  private ask(send: boolean): void {
    this.asked = true;
    if (send) this.child.stdin!.write(ASK);
    this.timer.since = performance.now();
    this.timer.handle = setTimeout(() => this.stop('time'), this.timer.left);
  }

  /** A frame arrived: the worker's clock stops until the next is asked for. */
  private pauseClock(): void {
    clearTimeout(this.timer.handle);
    this.timer.left -= performance.now() - this.timer.since;
  }

  private stop(failure: WorkerFailure): void {
    this.stoppedFor ??= failure;
    this.child.kill('SIGKILL');
  }

  private read(chunk: Buffer): void {
    if (this.stoppedFor || this.ended) return;
    // A worker writes only what it was asked for; anything else is past its answer.
    if (!this.asked) return this.stop('answer');
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.frameBytes === null && this.heldBytes >= FRAME_HEAD) {
      const head = Buffer.concat(this.held);
      this.held = [head];
      this.frameBytes = head.readUInt32BE(0);
      this.answerBytes += this.frameBytes;
      if (this.frameBytes > this.maxFrame || this.answerBytes > this.limits.maxAnswerBytes) {
        this.held = [];
        return this.stop('answer');
      }
    }
    if (this.frameBytes === null || this.heldBytes < FRAME_HEAD + this.frameBytes) return;
    if (this.heldBytes > FRAME_HEAD + this.frameBytes) return this.stop('answer');
    const body = Buffer.concat(this.held, this.heldBytes).subarray(FRAME_HEAD);
    this.held = [];
    this.heldBytes = 0;
    this.frameBytes = null;
    this.asked = false;
    this.pauseClock();
    if (this.batches && body.length === 0) {
      this.finished = true;
      return this.deliver({ done: true, value: undefined });
    }
    let value: O;
    try {
      value = deserialize(body) as O;
    } catch {
      return this.stop('crashed');
    }
    if (!this.batches) this.finished = true;
    else if (workerBatch.hasSubscribers) {
      workerBatch.publish({ file: this.file.href, bytes: body.length });
    }
    this.deliver({ done: false, value });
  }

  private deliver(result: IteratorResult<O, undefined>): void {
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) waiting.resolve(result);
    else this.ready = result;
    if (this.finished) this.end();
  }

  private fail(error: unknown): void {
    if (this.ended) return;
    this.ended = error instanceof Error ? error : new Error(String(error));
    this.end();
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }

  private end(): void {
    clearTimeout(this.timer.handle);
    clearInterval(this.watch);
    this.signal?.removeEventListener('abort', this.onAbort);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
    }
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
export async function runIsolated<O>(
  file: URL,
  input: unknown,
  limits: WorkerLimits,
  signal?: AbortSignal,
): Promise<O> {
  const worker = new IsolatedWorker<O>(file, input, limits, false, signal);
  try {
    const answer = await worker.next();
    if (answer.done) throw new WorkerLimitError('crashed');
    return answer.value;
  } finally {
    worker.close();
  }
}

/**
 * Runs `file`'s default export on `input` in a child process held to `limits` (as
 * `runIsolated`), its answer an iterator whose values come back one batch at a time: each
 * is asked of the worker only when the caller takes it, so the caller never holds more
 * than one. Leaving the loop early kills the worker.
 */
export async function* streamIsolated<O>(
  file: URL,
  input: unknown,
  limits: WorkerLimits,
  signal?: AbortSignal,
  attachment?: WorkerAttachment,
): AsyncGenerator<O, void, undefined> {
  const worker = new IsolatedWorker<O>(file, input, limits, true, signal, attachment);
  try {
    for (;;) {
      const batch = await worker.next();
      if (batch.done) return;
      yield batch.value;
    }
  } finally {
    worker.close();
  }
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

  /**
   * Runs `file` on `input` answering in batches (`streamIsolated`) once the bounds let
   * `key`'s call run; the worker counts against them until the last batch is taken or the
   * caller leaves the loop.
   */
  async *stream<O>(
    key: string,
    file: URL,
    input: unknown,
    limits: WorkerLimits,
    signal?: AbortSignal,
    attachment?: WorkerAttachment,
  ): AsyncGenerator<O, void, undefined> {
    const release = await this.take(key, signal);
    const memoryMb = Math.min(limits.maxMemoryMb, this.settings.memoryMaxBytes / MIB);
    const done = countRun(file);
    let outcome = 'stopped';
    try {
      yield* streamIsolated<O>(
        file,
        input,
        { ...limits, maxMemoryMb: memoryMb },
        signal,
        attachment,
      );
      outcome = 'ok';
    } catch (error) {
      if (error instanceof WorkerLimitError) outcome = error.failure;
      throw error;
    } finally {
      done(outcome);
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

/**
 * `runInWorker` for a module whose default export answers an iterator of batches (a
 * generator): the batches come back one at a time, each asked of the worker only when the
 * caller takes it, so the serving process holds at most one. `limits.timeoutMs` counts the
 * worker's own time, not the caller's on a batch; `maxBatchBytes` bounds each batch and
 * `maxAnswerBytes` all of them. The worker counts against the bounds until the last batch
 * is taken or the caller leaves the loop (which kills it).
 */
export function streamInWorker<O>(
  ctx: Pick<Context, 'config' | 'workspaceId' | 'signal'>,
  file: URL,
  input: unknown,
  limits: WorkerLimits,
  attachment?: WorkerAttachment,
): AsyncGenerator<O, void, undefined> {
  const key = ctx.workspaceId ?? 'anonymous';
  return workerPool(ctx.config).stream<O>(key, file, input, limits, ctx.signal, attachment);
}
