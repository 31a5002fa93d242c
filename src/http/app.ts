import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { GraphQLSchema } from 'graphql';
import inject from 'light-my-request';
import sirv from 'sirv';
import type { Config } from '../config.js';
import { isDatabaseUnavailable, type Database } from '../db/client.js';
import type { QueryGate } from '../db/gate.js';
import type { EventBus } from '../events/bus.js';
import type { MigrationSet } from '../db/migrate.js';
import { createGraphServer, GRAPH_PATH, type GraphServer } from '../graph/server.js';
import type { Logger } from '../log.js';
import type { LoadedPlugin } from '../plugin-host/host.js';
import { createMcpRoute, MCP_PATH } from '../mcp/route.js';
import { createCancellation } from './cancellation.js';
import type { AccessCatalogue } from '../auth/access.js';
import type { CredentialCache } from '../auth/credential-cache.js';
import { createGraphRoute } from './graph-route.js';
import { isInteractiveAsset, sendInteractiveAsset } from './interactive-page-route.js';
import { createSlots } from './guards/slots.js';
import { clientAddress } from './guards/client-address.js';
import { crossOriginRefusal, refuseCrossOrigin } from './guards/cross-origin.js';
import { sendJson } from './node-fetch-bridge.js';
import { createPluginGuard } from './plugin-guard.js';
import { createPluginRouter, PLUGIN_ROUTE_PREFIX } from './plugin-routes.js';
import { createReadiness } from './readiness.js';
import { databaseUnavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../errors.js';
import { httpRequests } from '../metrics/registry.js';
import { extracted, SpanKind, tracingOn, withSpan } from '../tracing/tracing.js';

/** The route a request counts under: a handful of fixed values, never its path. */
export function routeOf(path: string): string {
  if (path === GRAPH_PATH) return 'graph';
  if (path === MCP_PATH) return 'mcp';
  if (path === '/api/healthz' || path === '/api/readyz') return 'probe';
  if (path.startsWith(PLUGIN_ROUTE_PREFIX)) return 'plugin';
  return path === '/api' || path.startsWith('/api/') ? 'api' : 'web';
}

/**
 * The request's path as URL parsing gives it; the graph's own path, the common request,
 * without parsing.
 */
function pathOf(target: string | undefined): string {
  if (target === GRAPH_PATH) return GRAPH_PATH;
  return new URL(target ?? '/', 'http://localhost').pathname;
}

/** The route an answer counts under, kept on its response (no closure per request). */
const ROUTE = Symbol('route');

/** The 'finish' listener of {@link countAnswer}, one for every response. */
function countFinished(this: ServerResponse & { [ROUTE]?: string }): void {
  const status =
    STATUS_CLASSES[Math.floor(this.statusCode / 100)] ?? `${Math.floor(this.statusCode / 100)}xx`;
  httpRequests.inc({ route: this[ROUTE] ?? 'web', status });
}

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** Counts the answer by route and status class once it is written. */
function countAnswer(res: ServerResponse, route: string): void {
  (res as ServerResponse & { [ROUTE]?: string })[ROUTE] = route;
  res.once('finish', countFinished);
}

/**
 * The request's server span, child of the caller's `traceparent` if it sent one; the
 * graph's operation observer renames it after the operation.
 */
function serverSpan(
  req: IncomingMessage,
  res: ServerResponse,
  route: string,
  serve: () => Promise<void>,
): Promise<void> {
  if (!tracingOn() || route === 'probe') return serve();
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  return withSpan(
    `${req.method ?? 'GET'} ${route === 'web' ? '/' : path}`,
    {
      kind: SpanKind.SERVER,
      parent: extracted(req.headers),
      attributes: { 'http.request.method': req.method ?? 'GET', 'http.route': route },
    },
    async (span) => {
      await serve();
      span?.setAttribute('http.response.status_code', res.statusCode);
    },
  );
}

export interface AppDeps {
  config: Config;
  database: Database;
  /** Each request's view of `database`: its caller's share of the pool, cancelled with it. */
  gate: QueryGate;
  log: Logger;
  schema: GraphQLSchema;
  plugins: readonly LoadedPlugin[];
  /** Areas, capabilities and roles of the core and the plugins. */
  access: AccessCatalogue;
  /** The credentials this process read lately (src/auth/credential-cache.ts). */
  credentials: CredentialCache;
  /** Every migration set this process knows, for readiness. */
  migrationSets: readonly MigrationSet[];
  /** The process's event bus, for subscriptions. */
  events: EventBus;
  /** Aborted when shutdown cancels running requests. */
  shutdownSignal: AbortSignal;
  /** True once shutdown began: readiness answers 503 so balancers drain the process. */
  isShuttingDown(): boolean;
}

export interface App {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  graph: GraphServer;
}

/** Routes every request of the service: the graph, operator probes, plugins, the frontend. */
export function createApp(deps: AppDeps): App {
  const { config, log } = deps;
  const graph = createGraphServer(deps.schema, config, log);
  const cancellation = createCancellation(deps.shutdownSignal);
  const operationSlots = createSlots({ perKey: config.graph.operationsPerUser });
  const serveGraph = createGraphRoute({ ...deps, graph, cancellation, operationSlots });
  const serveMcp = createMcpRoute({ ...deps, graph, cancellation, operationSlots });
  const pluginRouter = createPluginRouter({
    ...deps,
    cancellation,
    guard: createPluginGuard(deps),
  });
  const web = config.server.webDir
    ? sirv(config.server.webDir, { single: true, etag: true, dev: false })
    : null;

  const ready = createReadiness({
    sql: deps.database.sql,
    migrationSets: deps.migrationSets,
    isShuttingDown: deps.isShuttingDown,
    log,
  });

  async function handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const url = () => new URL(req.url ?? '/', 'http://localhost');
    // SPEC 5: a browser write from another origin is refused before anything reads it;
    // an origin SVC_CORS_ORIGINS lists counts as the service's own. The graph judges a
    // write by its operation, once it holds the body (graph-route.ts).
    const crossOrigin =
      path === GRAPH_PATH
        ? null
        : crossOriginRefusal(req.method ?? 'GET', req.headers, config.server.corsOrigins);
    if (crossOrigin) return refuseCrossOrigin(req, res, log, crossOrigin);
    const client = clientAddress(
      req.socket.remoteAddress,
      req.headers['x-forwarded-for'],
      config.server.trustedProxies,
    );
    if (path === GRAPH_PATH) return serveGraph(req, res, url, client);
    if (path === MCP_PATH) return serveMcp(req, res, client);
    if (path === '/api/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path === '/api/readyz') return ready(res);
    if (path.startsWith(PLUGIN_ROUTE_PREFIX)) return pluginRouter(req, res, url());
    if (config.server.devGraphiql && isInteractiveAsset(path)) {
      return sendInteractiveAsset(req, res, path);
    }
    if (path === '/api' || path.startsWith('/api/') || !web) {
      return sendJson(res, 404, { error: 'not found' });
    }
    web(req, res, () => sendJson(res, 404, { error: 'not found' }));
  }

  return {
    graph,
    handle: async (req, res) => {
      // While draining, each answer tells its client to reconnect (to another process).
      if (deps.isShuttingDown()) res.setHeader('connection', 'close');
      const path = pathOf(req.url);
      const route = routeOf(path);
      countAnswer(res, route);
      try {
        await (tracingOn()
          ? serverSpan(req, res, route, () => handle(req, res, path))
          : handle(req, res, path));
      } catch (error) {
        // A client that went away, or was cut off by the read timeout, before its whole
        // request arrived is not a failure of the service, and has nobody left to answer.
        if (req.destroyed && !req.complete) {
          log.info({ path: req.url }, 'client went away before sending the whole request');
          return;
        }
        // Signing in, a plugin route or MCP found PostgreSQL down: 503 with Retry-After,
        // as the graph answers UNAVAILABLE (docs/errors.md).
        if (isDatabaseUnavailable(error)) {
          log.warn({ err: error, path: req.url }, 'request found the database unavailable');
          if (res.headersSent) return void res.destroy();
          const refusal = databaseUnavailable();
          const { http: _http, ...extensions } = refusal.extensions;
          const body = req.url?.startsWith(GRAPH_PATH)
            ? { data: null, errors: [{ message: refusal.message, extensions }] }
            : { error: refusal.message, code: refusal.reason };
          sendJson(res, 503, body, {
            'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
          });
          return;
        }
        const correlationId = randomUUID();
        log.error({ err: error, correlationId, path: req.url }, 'request failed');
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error', correlationId });
        else res.destroy();
      }
    },
  };
}

/** What an in-process request carries that a WHATWG `Request` cannot: its peer's address. */
export interface InProcessOptions {
  /** The address the app reads as the socket's peer (rate limits, budgets); 127.0.0.1. */
  remoteAddress?: string;
}

/** A request answered in-process: no socket, the same handler, a WHATWG `Response`. */
export type InProcessFetch = (request: Request, options?: InProcessOptions) => Promise<Response>;

// Answers that carry no body whatever the handler wrote (the Response constructor refuses one).
const NO_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/**
 * Runs `handler` (a node:http request listener) for a WHATWG `Request` without a socket,
 * through light-my-request's injection, and answers a WHATWG `Response`. The answer
 * resolves once its head is written and its body streams as the handler writes it (an
 * event stream included); cancelling the body or aborting the request closes the
 * response, as a client going away does. The request's body is read whole first. Nothing
 * is decompressed: a request that asks for a compressed answer reads the bytes as sent.
 */
export function inProcessFetch(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): InProcessFetch {
  return async (request, options = {}) => {
    request.signal.throwIfAborted();
    const payload = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    let answer: inject.Response;
    try {
      const dispatch = (req: IncomingMessage, res: ServerResponse) => {
        // A request aborted before or after its answer's head: its client went away.
        // Aborted before the injection ran (it starts on a later tick): never handled.
        if (request.signal.aborted) return void res.destroy();
        const goAway = () => {
          if (!res.writableEnded) res.destroy();
        };
        request.signal.addEventListener('abort', goAway, { once: true });
        handler(req, res);
      };
      answer = await inject(dispatch, {
        method: request.method,
        url: request.url,
        // Host as a client writes it: no port when it is the scheme's default.
        authority: new URL(request.url).host,
        headers,
        payload,
        remoteAddress: options.remoteAddress ?? '127.0.0.1',
        payloadAsStream: true,
        validate: false,
      });
    } catch (error) {
      // What fetch says of an aborted request, or of a connection closed before an answer.
      request.signal.throwIfAborted();
      throw new TypeError('fetch failed', { cause: error });
    }
    const res = answer.raw.res;
    const stream = answer.stream();
    // The body cancelled: the handler sees its client go away.
    stream.once('close', () => {
      if (!res.writableEnded) res.destroy();
    });
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const each of Array.isArray(value) ? value : [value]) {
        answerHeaders.append(name, String(each));
      }
    }
    const bodiless = request.method === 'HEAD' || NO_BODY_STATUS.has(answer.statusCode);
    if (bodiless) stream.resume();
    return new Response(bodiless ? null : webBody(stream), {
      status: answer.statusCode,
      statusText: answer.statusMessage,
      headers: answerHeaders,
    });
  };
}

/**
 * A node stream as a web stream whose cancel destroys it, read or not. Not Readable.toWeb
 * (cancelling it with chunks buffered throws, Node 22) nor ReadableStream.from (its cancel
 * of an iterator never read leaves the stream open).
 */
function webBody(stream: Readable): ReadableStream<Uint8Array> {
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel() {
      stream.destroy();
    },
  });
}
