import { isPromise, type Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';

export interface OperationDeadlineOptions {
  /** SVC_GRAPH_OPERATION_TIMEOUT. @default 60000 */
  timeoutMs: number;
  /** Seconds named in Retry-After (SVC_GRAPH_RETRY_AFTER). */
  retryAfterSeconds: number;
}

/** The answer of an operation past its deadline: the refusal, with `data: null`. */
export function deadlineAnswer(options: OperationDeadlineOptions) {
  return () => ({
    data: null,
    errors: [
      refuse(
        'operation_deadline_exceeded',
        { timeoutMs: options.timeoutMs },
        { http: { status: 429, headers: { 'Retry-After': String(options.retryAfterSeconds) } } },
      ),
    ],
  });
}

/**
 * One promise settled by whichever comes first: `running`'s answer, or the deadline, which
 * cancels the context (its statements stop) and settles with `onExpired()`.
 */
export function withinDeadline<T, E>(
  running: Promise<T>,
  context: Context,
  timeoutMs: number,
  onExpired: () => E,
): Promise<T | E> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      context.cancel(new Error('operation deadline passed'));
      resolve(onExpired());
    }, timeoutMs);
    running.then(
      (result) => {
        clearTimeout(timer);
        resolve(result);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error as Error);
      },
    );
  });
}

/**
 * Ends a query or mutation that runs past its deadline (SPEC 8.1): the answer is a
 * refusal, and the context's signal aborts so resolvers and queries stop working on it.
 * Subscriptions are bounded by the stream lifetime instead.
 */
export function useOperationDeadline(options: OperationDeadlineOptions): Plugin<Context> {
  const expired = deadlineAnswer(options);
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const ctx = args.contextValue as Context;
      setExecuteFn((executeArgs) => {
        const running = executeFn(executeArgs);
        // An answer already made has nothing left to bound.
        if (!isPromise(running)) return running;
        return withinDeadline(running, ctx, options.timeoutMs, expired);
      });
    },
  };
}
