import type { ExecutionResult, GraphQLSchema } from 'graphql';
import { createServerAdapter } from '@whatwg-node/server';
import {
  isAsyncIterable,
  processRegularResult,
  YogaServer,
  type GraphQLParams,
  type YogaServerInstance,
  type YogaServerOptions,
} from 'graphql-yoga';
import type { Config } from '../config.js';
import type { Context } from '../context.js';
import type { Logger } from '../log.js';
import { complexityCheck, useComplexityLimit } from './complexity.js';
import { createDirectPath, type DirectPath } from './direct.js';
import { useDocumentCache } from './document-cache.js';
import { useDocumentLimits } from './document-limits.js';
import { ROOT_COSTS } from './costs.js';
import { inputLimitsCheck, useInputLimits } from './input-limits.js';
import { useOperationDeadline } from './deadline.js';
import { useCompiledQueries } from './compiled-queries.js';
import { createErrorMasker, useRequestErrorShape, withNullData } from './error-shape.js';
import type { JsonMediaType, JsonOperation } from './json-operation.js';
import { useIntrospectionGate } from './introspection.js';
import { useSuggestionGate } from './suggestions.js';
import { yogaLogger } from './yoga-log.js';
import { operationRecorder, useOperationObserver, type OperationRecorder } from './observe.js';
import { operationSpansPlugin } from '../tracing/tracing.js';
import { useResolverSpans } from '../tracing/statements.js';
import {
  useSingleConnectionSse,
  useSingleConnectionStreamSlots,
} from '../http/single-connection.js';

export const GRAPH_PATH = '/api/graphql';

/** The server context the HTTP layer hands Yoga with each request. */
export type GraphServerContext = Omit<Context, 'request'>;

type YogaInstance = YogaServerInstance<GraphServerContext, Context>;

export interface GraphServer {
  /** Yoga behind its server adapter: any request, through the adapter's request hooks. */
  fetch: YogaInstance['fetch'];
  fetchAPI: YogaInstance['fetchAPI'];
  /**
   * Yoga's own handler, without the adapter: no request hooks (only graphql-sse's
   * single-connection mode has one here), no copy of the server context, no abort
   * wiring (an event stream needs it). For a plain operation, the common case.
   */
  handleOperation(request: Request, context: GraphServerContext): Promise<Response>;
  /**
   * One operation POSTed as JSON (src/graph/json-operation.ts), run through Yoga's
   * operation pipeline: its parameter checks, envelop's parse, validate and execute with
   * every plugin, its error masking. An answer without errors comes back as the JSON text
   * Yoga would have written; any other is Yoga's own Response for that result.
   */
  answerJson(
    operation: JsonOperation,
    mediaType: JsonMediaType,
    request: () => Request,
    context: GraphServerContext,
  ): Promise<JsonAnswer>;
}

/** Each JSON media type's Content-Type, made once rather than per answer. */
const CONTENT_TYPES: Readonly<Record<JsonMediaType, string>> = {
  'application/json': 'application/json; charset=utf-8',
  'application/graphql-response+json': 'application/graphql-response+json; charset=utf-8',
};

/** An answer without errors (HTTP 200 with this text), or Yoga's Response for another. */
export type JsonAnswer = { text: string; contentType: string } | { response: Response };

/**
 * Yoga serving the schema at /api/graphql. Body caps, credentials and request guards run
 * in the HTTP layer before Yoga reads anything.
 */
export function createGraphServer(schema: GraphQLSchema, config: Config, log: Logger): GraphServer {
  const retryAfterSeconds = Math.max(1, Math.ceil(config.graph.retryAfterMs / 1000));
  const recorder = operationRecorder(log);
  const tracing = tracingPlugins();
  const checks: Checks = {
    recorder,
    inputLimits: inputLimitsCheck(),
    complexity: complexityCheck({
      defaultPageSize: config.graph.pageSize,
      retryAfterSeconds,
      rootCosts: ROOT_COSTS,
    }),
  };
  // With tracing on, every operation takes Yoga's path, which makes its spans.
  const direct =
    tracing.length === 0
      ? createDirectPath({
          schema,
          ...checks,
          deadline: { timeoutMs: config.graph.operationTimeoutMs, retryAfterSeconds },
          maskError: createErrorMasker(log),
        })
      : null;
  // What createYoga does, keeping the server beside its adapter.
  const yoga = new YogaServer<GraphServerContext, Context>(
    yogaOptions(schema, config, log, { ...checks, tracing, direct }),
  );
  const adapter = createServerAdapter(yoga as never, {
    fetchAPI: yoga.fetchAPI,
    plugins: (yoga as unknown as { plugins: [] }).plugins,
  }) as unknown as YogaInstance;
  const toResponse = (
    result: ExecutionResult | AsyncIterable<ExecutionResult>,
    mediaType: string,
  ) => {
    const shaped = isAsyncIterable(result) ? result : withNullData(result);
    return { response: processRegularResult(shaped as never, yoga.fetchAPI, mediaType) };
  };
  return {
    fetch: adapter.fetch,
    fetchAPI: adapter.fetchAPI,
    // Yoga's handler asks the adapter's `waitUntil` of its context; nothing here uses it.
    handleOperation: async (request, context) => yoga.handle(request, context as never),
    async answerJson(operation, mediaType, request, context) {
      const contentType = CONTENT_TYPES[mediaType];
      // A query a signed-in caller sent before, without Yoga's pipeline (direct.ts).
      if (direct && context.actor) {
        const answer = await direct.run(operation, context as Context);
        if (answer && 'result' in answer)
          return { text: JSON.stringify(answer.result), contentType };
        if (answer) return toResponse(answer.refused, mediaType);
      }
      const result = (await yoga.getResultForParams(
        // Yoga's JSON parser hands on the body as it is, nulls included.
        { params: operation as GraphQLParams, request: request() },
        context as never,
      )) as ExecutionResult | AsyncIterable<ExecutionResult>;
      // What Yoga's result processing does with a single result (processResult: our
      // onResultProcess hook, then its regular processor), short of building a Response
      // when there is nothing but data to write. A non-streaming request never gets an
      // event stream here: subscriptions refuse it.
      if (isAsyncIterable(result) || result.errors?.length || result.extensions?.http) {
        return toResponse(result, mediaType);
      }
      direct?.learn(operation, context as Context);
      return { text: JSON.stringify(result), contentType };
    },
  };
}

/** The checks and the recorder Yoga's plugins and the direct path share. */
interface Checks {
  recorder: OperationRecorder;
  inputLimits: ReturnType<typeof inputLimitsCheck>;
  complexity: ReturnType<typeof complexityCheck>;
}

function yogaOptions(
  schema: GraphQLSchema,
  config: Config,
  log: Logger,
  shared: Checks & { tracing: ReturnType<typeof tracingPlugins>; direct: DirectPath | null },
): YogaServerOptions<GraphServerContext, Context> {
  const retryAfterSeconds = Math.max(1, Math.ceil(config.graph.retryAfterMs / 1000));
  const complexityOptions = {
    defaultPageSize: config.graph.pageSize,
    retryAfterSeconds,
    rootCosts: ROOT_COSTS,
  };
  return {
    schema,
    graphqlEndpoint: GRAPH_PATH,
    landingPage: false,
    // Yoga's default CORS names any origin back with credentials; the HTTP layer answers
    // CORS for SVC_CORS_ORIGINS alone (src/http/guards/cors.ts).
    cors: false,
    // The HTTP layer serves the interactive page (SVC_DEV_GRAPHIQL) itself, rendered and
    // compressed once (src/http/interactive-page-route.ts); Yoga would render it per request.
    graphiql: false,
    maskedErrors: { maskError: createErrorMasker(log) },
    logging: yogaLogger(log),
    // The HTTP layer already held the body to SVC_GRAPH_BODY_MAX_BYTES or
    // SVC_GRAPH_UPLOAD_MAX_BYTES; Yoga's own limit would copy it through another stream.
    maxRequestBodySize: false,
    // Its own, without a per-request cost (document-cache.ts), last as Yoga's would be.
    parserAndValidationCache: false,
    plugins: [
      // First, so its requests (PUT, DELETE, or carrying a stream token) reach nothing else.
      useSingleConnectionSse(GRAPH_PATH),
      useOperationObserver(log, shared.recorder),
      ...shared.tracing,
      useRequestErrorShape(),
      useDocumentLimits(),
      useIntrospectionGate({ allowAnonymous: config.server.devGraphiql }),
      useInputLimits(shared.inputLimits),
      useComplexityLimit(complexityOptions, shared.complexity),
      // Before the deadline, which then bounds a compiled run and any run again.
      useCompiledQueries(),
      useOperationDeadline({ timeoutMs: config.graph.operationTimeoutMs, retryAfterSeconds }),
      useSingleConnectionStreamSlots(),
      useDocumentCache(),
      // After the cache, which keeps validation's result as made, for every caller.
      useSuggestionGate({ allowAnonymous: config.server.devGraphiql }),
      ...(shared.direct ? [shared.direct.plugin] : []),
    ],
  };
}

/**
 * With tracing on: envelop's OpenTelemetry plugin makes each operation's span
 * (src/tracing/tracing.ts loads it with the SDK), and resolvers get a span once they run a
 * statement (src/tracing/statements.ts).
 */
function tracingPlugins() {
  const operationSpans = operationSpansPlugin();
  return operationSpans ? [operationSpans, useResolverSpans()] : [];
}
