import { randomUUID } from 'node:crypto';
import { GraphQLError, Kind, type DocumentNode, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { isDatabaseUnavailable } from '../db/client.js';
import { isCancellation } from '../db/gate.js';
import { AppError, databaseUnavailable, internalError } from '../errors.js';
import { literalPlace, requestErrorField } from './error-path.js';
import type { Logger } from '../log.js';

function appErrorIn(error: unknown): AppError | null {
  for (let e: unknown = error; e; e = (e as { originalError?: unknown }).originalError) {
    if (e instanceof AppError) return e;
  }
  return null;
}

/** A GraphQLError all the way down: a request error from parsing, validation or variables. */
function isRequestError(error: unknown): error is GraphQLError {
  if (!(error instanceof GraphQLError)) return false;
  return !error.originalError || isRequestError(error.originalError);
}

/**
 * Yoga's `maskError`: gives every error SPEC 7.1's shape. A refusal keeps its code, reason
 * and meta wherever graphql-js wrapped it; an error of the request itself (syntax,
 * validation, variables) becomes VALIDATION; anything else is logged with a correlation
 * id and answered as a bare INTERNAL.
 */
export function createErrorMasker(log: Logger) {
  return (error: unknown): Error => {
    const refusal = appErrorIn(error);
    if (refusal) {
      if (refusal === error) return refusal;
      const outer = error as GraphQLError;
      return new GraphQLError(outer.message, {
        nodes: outer.nodes,
        path: outer.path,
        extensions: refusal.extensions,
      });
    }
    if (isRequestError(error)) {
      // Yoga's own codes (GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, BAD_REQUEST)
      // become the spec's VALIDATION; its `http` hint stays for the transport. A syntax
      // error has no nodes, only a source and positions: they keep its `locations`.
      return new GraphQLError(error.message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        extensions: {
          ...error.extensions,
          code: 'VALIDATION',
          reason: 'operation_invalid',
          meta: {},
        },
      });
    }
    // PostgreSQL down, restarting or cut off: a documented UNAVAILABLE (503, Retry-After),
    // not an INTERNAL the caller cannot tell from a defect.
    if (!isCancellation(error) && isDatabaseUnavailable(error)) {
      log.warn({ err: error }, 'graph operation found the database unavailable');
      const path = (error as { path?: readonly (string | number)[] }).path;
      return databaseUnavailable(path ? { path } : {});
    }
    const correlationId = randomUUID();
    // A statement ended because its request was (deadline, client gone, shutdown): the
    // answer, if anyone still reads it, is INTERNAL, but nothing failed.
    if (isCancellation(error)) log.info({ correlationId }, 'graph operation cancelled');
    else log.error({ err: error, correlationId }, 'unexpected error in a graph operation');
    const masked = internalError(correlationId);
    const path = (error as { path?: readonly (string | number)[] }).path;
    return path
      ? new GraphQLError(masked.message, { path, extensions: masked.extensions })
      : masked;
  };
}

function asRequestRefusal(error: GraphQLError): void {
  const extensions = error.extensions as Record<string, unknown>;
  // A literal a scalar refused carries that refusal (value_malformed) as its cause.
  const refusal = appErrorIn(error);
  extensions.code = 'VALIDATION';
  extensions.reason = refusal?.reason ?? 'operation_invalid';
  extensions.meta = refusal?.meta ?? {};
}

/**
 * The error with `path` set to the field it is about, when it has none and a field is
 * found; a literal refused by its scalar also names its argument, as a variable's would.
 */
function withFieldPath(document: DocumentNode, error: GraphQLError): GraphQLError {
  const node = error.nodes?.[0];
  const field = !error.path && node ? requestErrorField(document, node) : undefined;
  if (!field || !node) return error;
  const isLiteral = error instanceof AppError && error.reason === 'value_malformed';
  const place =
    isLiteral && node.kind !== Kind.VARIABLE_DEFINITION && literalPlace(field.node, node as never);
  return new GraphQLError(place ? `${place}; ${error.message}` : error.message, {
    nodes: error.nodes,
    path: field.path,
    // The refusal stays its cause: the document cache keeps this error and hands it to the
    // next request's shaping, which reads the reason and meta from there again.
    originalError: appErrorIn(error) ?? error.originalError,
    extensions: error.extensions,
  });
}

function isExecutionResult(result: unknown): result is ExecutionResult {
  return typeof result === 'object' && result !== null && !(Symbol.asyncIterator in result);
}

/** SPEC 7.1: an answer with errors that ran nothing says `data: null`. */
export function withNullData(result: ExecutionResult): ExecutionResult {
  return result.errors?.length && result.data === undefined ? { data: null, ...result } : result;
}

/**
 * Parse and validation errors skip `maskError`; Yoga marks them GRAPHQL_PARSE_FAILED or
 * GRAPHQL_VALIDATION_FAILED. This gives them the spec's VALIDATION shape instead. Every
 * error of the request itself (validation, a variable's value) also gets the `path` of the
 * field it is about, and an answer that ran nothing gets `data: null` (SPEC 7.1), so a
 * malformed value answers the same shape written inline or passed as a variable.
 */
export function useRequestErrorShape(): Plugin {
  return {
    onParse() {
      return ({ result }) => {
        if (result instanceof GraphQLError) asRequestRefusal(result);
      };
    },
    onValidate({ params }) {
      return ({ valid, result, setResult }) => {
        if (valid) return;
        for (const error of result) asRequestRefusal(error);
        setResult(result.map((error) => withFieldPath(params.documentAST, error)));
      };
    },
    onExecute({ args }) {
      return {
        onExecuteDone({ result, setResult }) {
          if (!isExecutionResult(result) || result.data !== undefined || !result.errors) return;
          setResult({
            ...result,
            errors: result.errors.map((error) => withFieldPath(args.document, error)),
          });
        },
      };
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !isExecutionResult(result)) return;
      setResult(withNullData(result));
    },
  };
}
