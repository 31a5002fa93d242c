import {
  getOperationAST,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLError,
  type GraphQLSchema,
} from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import { isPromise, type Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import type { ComplexityCheck } from './complexity.js';
import { compiledQuery } from './compiled-queries.js';
import { deadlineAnswer, type OperationDeadlineOptions } from './deadline.js';
import type { InputLimitsCheck } from './input-limits.js';
import type { JsonOperation } from './json-operation.js';
import type { OperationRecorder, Running } from './observe.js';

/**
 * The graph's direct path (issue 29): a query a signed-in caller sends again, run without
 * Yoga's and envelop's per-request pipeline.
 *
 * Yoga serves a query text the first time, with every plugin (server.ts). When its answer
 * has no error, the caller is signed in and the operation is a query graphql-jit compiled,
 * the text is kept here with its parsed document and compiled query. Everything Yoga's
 * pipeline decided of that text holds for any signed-in caller who sends it again: it
 * parses, it is within the document limits, it validates (only an anonymous caller's
 * validation differs: suggestions and introspection are held from them). What depends on
 * the request is decided again here, as the plugins decide it: the variables against the
 * input limits, the operation's cost against the complexity limit, the deadline, and the
 * metrics of the operation observer.
 *
 * Any answer but a clean one goes back to Yoga, which runs the operation again and answers
 * it with its shapes: a refusal of the input or complexity limits before anything runs,
 * and an answer with errors after this run (queries only read, so the second run changes
 * nothing, as compiled-queries.ts already does for graphql-js). Only the deadline is
 * answered here, with the refusal the deadline plugin gives.
 */
export interface DirectPath {
  /** Records which document Yoga ran for a context (a plugin of the Yoga server). */
  plugin: Plugin<Context>;
  /**
   * The result of `operation` run directly: a clean result, the deadline's refusal, or
   * null when Yoga must answer (a text not kept, a refusal, an error).
   */
  run(operation: JsonOperation, context: Context): Promise<DirectResult | null>;
  /** After Yoga answered `operation` without errors for `context`: keeps it when it may. */
  learn(operation: JsonOperation, context: Context): void;
}

export type DirectResult = { result: ExecutionResult } | { expired: ExecutionResult };

export interface DirectPathOptions {
  schema: GraphQLSchema;
  inputLimits: InputLimitsCheck;
  complexity: ComplexityCheck;
  recorder: OperationRecorder;
  deadline: OperationDeadlineOptions;
}

/** A query text kept, with what running it needs. */
interface Kept {
  document: DocumentNode;
  operationName: string | null | undefined;
  query: CompiledQuery;
  /** The operation's metric label. */
  label: string;
}

/** Texts kept (each with its document): Yoga's document cache holds as many. */
const KEPT_MAX = 1024;

const EXPIRED = Symbol('deadline passed');

function keyOf(operation: JsonOperation): string {
  return operation.operationName
    ? `${operation.operationName}\u0000${operation.query}`
    : operation.query;
}

export function createDirectPath(options: DirectPathOptions): DirectPath {
  const { schema, recorder } = options;
  const kept = new Map<string, Kept>();
  const ran = new WeakMap<object, { document: DocumentNode; operationName?: string | null }>();
  const expired = deadlineAnswer(options.deadline);
  const { timeoutMs } = options.deadline;

  /** The answer, or EXPIRED once the deadline passed first (the context is cancelled). */
  function bounded(
    running: Promise<ExecutionResult>,
    context: Context,
  ): Promise<ExecutionResult | typeof EXPIRED> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        context.cancel(new Error('operation deadline passed'));
        resolve(EXPIRED);
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

  return {
    plugin: {
      onExecute({ args }) {
        ran.set(args.contextValue, { document: args.document, operationName: args.operationName });
      },
    },

    learn(operation, context) {
      const what = ran.get(context);
      if (!what || !context.actor) return;
      const definition = getOperationAST(what.document, what.operationName);
      if (definition?.operation !== 'query') return;
      const query = compiledQuery(schema, what.document, what.operationName);
      if (!query) return;
      if (kept.size >= KEPT_MAX) kept.clear();
      kept.set(keyOf(operation), {
        document: what.document,
        operationName: what.operationName,
        query,
        label: recorder.label(definition.name?.value ?? 'anonymous'),
      });
    },

    async run(operation, context) {
      const entry = kept.get(keyOf(operation));
      if (!entry) return null;
      const args = {
        schema,
        document: entry.document,
        operationName: entry.operationName,
        variableValues: operation.variables,
      };
      if (options.inputLimits(args) || options.complexity(args)) return null;
      const running: Running = {
        startedAt: performance.now(),
        operation: entry.label,
        type: 'query',
      };
      let result: ExecutionResult | typeof EXPIRED;
      try {
        const made = entry.query.query(undefined, context, operation.variables ?? {}) as
          ExecutionResult | Promise<ExecutionResult>;
        result = isPromise(made) ? await bounded(made, context) : made;
      } catch {
        return null;
      }
      if (result === EXPIRED) {
        const answer = expired();
        recorder.finished(running, answer.errors as unknown as GraphQLError[], context);
        return { expired: answer };
      }
      if (result.errors?.length) return null;
      recorder.finished(running, undefined, context);
      return { result };
    },
  };
}
