import { getOperationAST, type DocumentNode, type GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { trace } from '@opentelemetry/api';
import type { Context } from '../context.js';
import type { Logger } from '../log.js';
import {
  boundedLabel,
  graphDuration,
  graphOperations,
  graphRefusals,
  OTHER,
} from '../metrics/registry.js';
import { tracingOn } from '../tracing/tracing.js';

type Outcome = 'ok' | 'refused' | 'unavailable' | 'internal';

/** What the observer knows of one operation, from its parameters to its result. */
export interface Running {
  startedAt: number;
  operation: string;
  type: string;
}

/** `ok` without errors; else the worst error's: internal, then unavailable, then refused. */
export function outcomeOf(errors: readonly GraphQLError[] | undefined): Outcome {
  if (!errors?.length) return 'ok';
  const codes = new Set(errors.map((error) => error.extensions?.code));
  if (codes.has('INTERNAL')) return 'internal';
  if (codes.has('UNAVAILABLE')) return 'unavailable';
  return 'refused';
}

/** Who called, as a log line names it: never who they are. */
export function callerKind(context: Partial<Pick<Context, 'actor'>>): string {
  if (!context.actor) return 'anonymous';
  return context.actor.token ? 'token' : 'session';
}

export function named(document: DocumentNode, operationName: string | null | undefined) {
  const operation = getOperationAST(document, operationName);
  return { operation: operation?.name?.value ?? 'anonymous', type: operation?.operation ?? '' };
}

/** Records each operation's outcome: the observer plugin's, shared with the direct path. */
export interface OperationRecorder {
  /** The operation's name as a metric label (bounded). */
  label(name: string): string;
  /** Counts, times and (when refused) logs an operation that has its result. */
  finished(entry: Running, errors: readonly GraphQLError[] | undefined, context: unknown): void;
}

export function operationRecorder(log: Logger): OperationRecorder {
  return {
    label: boundedLabel(),
    finished(entry, errors, context) {
      graphDuration.observe(
        { operation: entry.operation },
        (performance.now() - entry.startedAt) / 1000,
      );
      const outcome = outcomeOf(errors);
      graphOperations.inc({ operation: entry.operation, type: entry.type, outcome });
      if (outcome !== 'refused' || !errors) return;
      for (const error of errors) {
        graphRefusals.inc({
          code: String(error.extensions?.code ?? ''),
          reason: String(error.extensions?.reason ?? ''),
        });
      }
      const [first] = errors;
      ((context as Partial<Context>).log ?? log).debug(
        {
          reason: first?.extensions?.reason,
          code: first?.extensions?.code,
          ...(errors.length > 1 ? { errors: errors.length } : {}),
          operation: entry.operation,
          caller: callerKind(context as Partial<Context>),
        },
        'operation refused',
      );
    },
  };
}

/**
 * Counts and times every graph operation (docs/operations.md, "Metrics") and logs each
 * refused one as a single line at `debug`: its reason, operation and caller kind. A
 * refusal is the client's business, so nothing reaches `info`; an INTERNAL is logged at
 * `error` by the masker (src/graph/error-shape.ts). With tracing on, the request's span
 * takes the operation's name.
 */
export function useOperationObserver(
  log: Logger,
  recorder: OperationRecorder = operationRecorder(log),
): Plugin<Context> {
  const { label } = recorder;
  const running = new WeakMap<Request, Running>();

  function known(request: Request, document: DocumentNode, operationName?: string | null) {
    const entry = running.get(request);
    if (!entry) return;
    const { operation, type } = named(document, operationName);
    entry.operation = label(operation);
    entry.type = type;
    if (tracingOn()) trace.getActiveSpan()?.updateName(`${type} ${entry.operation}`);
  }

  return {
    onParams({ params, request }) {
      const operation = params.operationName ? label(params.operationName) : OTHER;
      running.set(request, { startedAt: performance.now(), operation, type: '' });
    },
    onExecute({ args }) {
      known(args.contextValue.request, args.document, args.operationName);
    },
    onSubscribe({ args }) {
      known(args.contextValue.request, args.document, args.operationName);
    },
    onExecutionResult({ result, request, context }) {
      const entry = running.get(request);
      if (!entry) return;
      running.delete(request);
      const errors =
        !result || isAsyncIterable(result)
          ? undefined
          : Array.isArray(result)
            ? result.flatMap((one) => one.errors ?? [])
            : result.errors;
      recorder.finished(entry, errors, context);
    },
  };
}
