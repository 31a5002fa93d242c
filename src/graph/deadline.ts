import type { Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';

export interface OperationDeadlineOptions {
  /** SVC_GRAPH_OPERATION_TIMEOUT. @default 60000 */
  timeoutMs: number;
  /** Seconds named in Retry-After (SVC_GRAPH_RETRY_AFTER). */
  retryAfterSeconds: number;
}

/**
 * Ends a query or mutation that runs past its deadline (SPEC 8.1): the answer is a
 * refusal, and the context's signal aborts so resolvers and queries stop working on it.
 * Subscriptions are bounded by the stream lifetime instead.
 */
export function useOperationDeadline(options: OperationDeadlineOptions): Plugin<Context> {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const ctx = args.contextValue as Context;
      setExecuteFn(async (executeArgs) => {
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<{ data: null; errors: Error[] }>((resolve) => {
          timer = setTimeout(() => {
            ctx.cancel(new Error('operation deadline passed'));
            resolve({
              data: null,
              errors: [
                refuse(
                  'operation_deadline_exceeded',
                  { timeoutMs: options.timeoutMs },
                  {
                    http: {
                      status: 429,
                      headers: { 'Retry-After': String(options.retryAfterSeconds) },
                    },
                  },
                ),
              ],
            });
          }, options.timeoutMs);
        });
        try {
          return await Promise.race([executeFn(executeArgs), expired]);
        } finally {
          clearTimeout(timer);
        }
      });
    },
  };
}
