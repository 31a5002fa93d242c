import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GraphQLSchema } from 'graphql';
import type { AccessCatalogue } from '../auth/access.js';
import type { CredentialCache } from '../auth/credential-cache.js';
import { resolveCredential } from '../auth/credentials.js';
import type { Config } from '../config.js';
import { createContext, type Actor } from '../context.js';
import type { Database } from '../db/client.js';
import type { QueryGate } from '../db/gate.js';
import type { EventBus } from '../events/bus.js';
import { refuse, refusePlugin, seconds, type AppError } from '../errors.js';
import { uploadCapacity } from '../graph/input-limits.js';
import { jsonMediaType, jsonOperation } from '../graph/json-operation.js';
import { GRAPH_PATH, type GraphServer, type GraphServerContext } from '../graph/server.js';
import type { Logger } from '../log.js';
import type { createCancellation } from './cancellation.js';
import { anonymousBodyRefusal, anonymousQueryRefusal } from './guards/anonymous.js';
import { answerTooLargeBody } from './guards/answer-cap.js';
import { applyCors } from './guards/cors.js';
import { crossOriginRefusal, refuseCrossOrigin } from './guards/cross-origin.js';
import { GRAPH_GET_REFUSED_BODY, graphGetRefused } from './guards/graph-get.js';
import { requestedOperation } from './guards/graph-request.js';
import { asksForWrite } from './guards/operation-kind.js';
import { asksOnlyForSchema } from './guards/schema-request.js';
import { createSlots, type Slots } from './guards/slots.js';
import { streamRequested } from './guards/stream-accept.js';
import {
  createStreamReservations,
  singleConnectionStep,
  STREAM_TOKEN_HEADER,
  type SingleConnectionStep,
} from './single-connection.js';
import { asksForInteractivePage, sendInteractivePage } from './interactive-page-route.js';
import {
  headerRecord,
  readBody,
  sendJson,
  sendJsonText,
  sendWebResponse,
  toWebRequest,
  type SendOptions,
} from './node-fetch-bridge.js';

export interface GraphRouteDeps {
  config: Config;
  /** The served schema: its upload fields' declared file sizes bound a multipart body. */
  schema: GraphQLSchema;
  database: Database;
  gate: QueryGate;
  log: Logger;
  access: AccessCatalogue;
  credentials: CredentialCache;
  graph: GraphServer;
  cancellation: ReturnType<typeof createCancellation>;
  events: EventBus;
  /**
   * Each signed-in user's concurrent operations (SVC_GRAPH_OPERATIONS_PER_USER), shared
   * with the agent endpoint: an agent's tool calls count like the user's own operations.
   */
  operationSlots: Slots;
}

function graphRefusal(
  res: ServerResponse,
  status: number,
  error: AppError,
  headers: Record<string, string> = {},
) {
  sendJson(res, status, { data: null, errors: [error.toJSON()] }, headers);
}

/** Whose share of the pool a request's statements take: its user, else its address. */
export function callerKey(actor: Actor | null, clientAddress: string): string {
  return actor ? actor.userId : `anonymous:${clientAddress}`;
}

/**
 * The answer of a stream over SVC_STREAMS_PER_USER: SPEC 7.3's `rate_limited` (clients
 * match it), with a message naming the stream cap rather than the login limiter's "too
 * many attempts", and meta saying which limit it is (docs/decisions.md).
 */
export function streamCapRefusal(perUser: number, retryAfter: number): AppError {
  const meta = { retryAfter, limit: 'streams_per_user', max: perUser };
  return refuse('rate_limited', meta, {
    message:
      `too many open event streams: at most ${perUser} per user; ` +
      `close one or try again in ${seconds(retryAfter)}`,
    extensions: { retryAfter },
  });
}

/**
 * Room a multipart upload has beyond its files: the operation and map parts, boundaries and
 * part headers (docs/limits.md).
 */
export const MULTIPART_ALLOWANCE = 64 * 1024;

function isMultipart(req: IncomingMessage): boolean {
  return /^multipart\//i.test(req.headers['content-type'] ?? '');
}

/**
 * POST and GET /api/graphql: credentials, SPEC 8.2's anonymous caps and per-caller slots,
 * body caps, then Yoga. Refusals made here have the graph's error shape.
 */
export function createGraphRoute(deps: GraphRouteDeps) {
  const { config, log } = deps;
  const uploads = uploadCapacity(deps.schema);
  const retryAfter = String(Math.max(1, Math.ceil(config.graph.retryAfterMs / 1000)));
  const anonymousSlots = createSlots({
    perKey: config.graph.anonymous.perIp,
    ceiling: config.graph.anonymous.ceiling,
  });
  const { operationSlots } = deps;
  const streamSlots = createSlots({ perKey: config.graph.streamsPerUser });
  const reservations = createStreamReservations({
    perUser: config.graph.streamsPerUser,
    // The client opens its stream right after reserving it; SVC_HTTP_READ_TIMEOUT is the
    // time any request has to arrive whole.
    openWithinMs: config.http.readTimeoutMs,
    onExpire: (token) => void closeUnopened(token),
  });

  /** Frees graphql-sse's record of a stream reserved and never opened: opens and cancels it. */
  async function closeUnopened(token: string): Promise<void> {
    try {
      const request = new deps.graph.fetchAPI.Request(`http://localhost${GRAPH_PATH}`, {
        method: 'GET',
        headers: { accept: 'text/event-stream', [STREAM_TOKEN_HEADER]: token },
      });
      const response = await deps.graph.fetch(request, {} as GraphServerContext);
      await response.body?.cancel();
    } catch (error) {
      log.warn({ err: error }, 'unopened event stream could not be freed');
    }
  }

  function streamsTaken(res: ServerResponse) {
    const error = streamCapRefusal(config.graph.streamsPerUser, Number(retryAfter));
    graphRefusal(res, 429, error, { 'retry-after': retryAfter });
  }

  /**
   * A single-connection request other than a PUT must present a token its own credential
   * reserved: opened, or (to open it) not yet. Anyone else's token names nothing here.
   * Answers false once it has refused.
   */
  function ownsStream(
    step: Exclude<SingleConnectionStep, { kind: 'reserve' }>,
    res: ServerResponse,
    actor: Actor,
  ): boolean {
    const state = step.kind === 'connect' ? 'unopened' : 'open';
    if (reservations.owns(step.token, actor, state)) return true;
    sendJson(res, 404, { error: 'event stream not found' });
    return false;
  }

  /**
   * A single-connection stream lives as a stream does: it ends at SVC_STREAM_LIFETIME,
   * at shutdown, and when its credential is revoked or expires (a bus subscriber that
   * accepts no notice, ended like any other). Ending it completes its operations.
   */
  function holdConnection(actor: Actor, token: string, controller: AbortController): void {
    reservations.open(token);
    const lifeline = deps.events.subscribe({
      actor,
      accept: () => false,
      signal: controller.signal,
      lifetimeMs: config.graph.streamLifetimeMs,
    });
    // What ends the lifeline (a revocation, shutdown) ends the stream's subscriptions in
    // the same turn; their `complete` frames are queued within that turn's promise jobs,
    // so the stream closes one turn later, after them, and the client sees them complete.
    void lifeline.next().then(() => setImmediate(() => controller.abort()));
  }

  function slotsTaken(res: ServerResponse) {
    const error = refuse(
      'rate_limited',
      { retryAfter: Number(retryAfter) },
      { extensions: { retryAfter: Number(retryAfter) } },
    );
    graphRefusal(res, 429, error, { 'retry-after': retryAfter });
  }

  /** Reads the body within the caller's cap; answers null once it has refused. */
  async function body(
    req: IncomingMessage,
    res: ServerResponse,
    actor: Actor | null,
  ): Promise<Buffer | null | 'refused'> {
    if (req.method === 'GET' || req.method === 'HEAD') return null;
    const multipart = isMultipart(req);
    if (!actor && multipart) {
      graphRefusal(res, 200, refuse('authentication_required'));
      return 'refused';
    }
    const maxBytes = !actor
      ? config.graph.anonymous.maxBytes
      : multipart
        ? config.graph.uploadMaxBytes
        : config.graph.bodyMaxBytes;
    // An upload can't be larger than the files the schema's upload fields take, plus its
    // operation: one declared (or sent) past that is refused at once, by its field's reason.
    const filesFit =
      actor && multipart && uploads && uploads.maxBytes + MULTIPART_ALLOWANCE < maxBytes
        ? uploads
        : null;
    const read = await readBody(req, filesFit ? filesFit.maxBytes + MULTIPART_ALLOWANCE : maxBytes);
    if (read === 'too-large') {
      if (!actor)
        graphRefusal(res, 200, refuse('authentication_required'), { connection: 'close' });
      else if (filesFit && !(Number(req.headers['content-length']) > maxBytes)) {
        const error = refusePlugin(filesFit.tooLarge, { maxBytes: filesFit.maxBytes });
        graphRefusal(res, 413, error, { connection: 'close' });
      } else
        graphRefusal(res, 413, refuse('body_too_large', { maxBytes }), { connection: 'close' });
      return 'refused';
    }
    return read;
  }

  return async function serveGraph(
    req: IncomingMessage,
    res: ServerResponse,
    urlOf: () => URL,
    clientAddress: string,
  ): Promise<void> {
    // The request's URL is parsed only when something reads it (a GET's query, a stream
    // token in the query string): a POST to the graph's path needs none.
    let parsed: URL | undefined;
    const url = () => (parsed ??= urlOf());
    if (applyCors(req, res, config.server.corsOrigins)) return;
    if (config.server.devGraphiql && asksForInteractivePage(req)) {
      return sendInteractivePage(req, res);
    }
    if (graphGetRefused(req.method ?? 'GET', req.headers.accept, config.server.devGraphiql)) {
      return sendJson(res, 405, GRAPH_GET_REFUSED_BODY, { allow: 'POST' });
    }
    // SPEC 5: a browser write from another origin is refused before the graph reads it.
    // A write is judged by its operation, so a POSTed query passes; a multipart body (an
    // upload) is a write, refused before it is buffered.
    const crossOrigin = crossOriginRefusal(
      req.method ?? 'GET',
      req.headers,
      config.server.corsOrigins,
    );
    if (crossOrigin && (req.method !== 'POST' || isMultipart(req))) {
      return refuseCrossOrigin(req, res, log, crossOrigin);
    }
    const credential = await resolveCredential(
      deps.database.db,
      deps.access,
      req.headers,
      deps.credentials,
    );
    if ('invalidToken' in credential) {
      return graphRefusal(
        res,
        200,
        refuse('authentication_required', {}, { message: 'invalid token' }),
      );
    }
    const { actor } = credential;
    // graphql-sse's single-connection mode is for signed-in callers only. Its client reads
    // the status of a reservation (PUT) and of its other steps, never a body: a 401 says why.
    const step = singleConnectionStep(req, url);
    if (step && !actor) {
      return graphRefusal(res, 401, refuse('authentication_required'), {
        'www-authenticate': 'Bearer',
      });
    }
    if (step && actor && step.kind !== 'reserve' && !ownsStream(step, res, actor)) return;
    const read = await body(req, res, actor);
    if (read === 'refused') return;
    if (crossOrigin && asksForWrite(read)) return refuseCrossOrigin(req, res, log, crossOrigin);
    // With SVC_DEV_GRAPHIQL the interactive page reads the schema before anyone signs in:
    // its introspection query passes the anonymous token, query and answer caps (still
    // held to the anonymous body cap and slots). Without it, nothing here changes.
    const schemaOnly = !actor && config.server.devGraphiql && asksOnlyForSchema(url(), read);
    if (!actor) {
      const refusal =
        anonymousBodyRefusal({
          contentType: req.headers['content-type'],
          bodyBytes: read?.length ?? 0,
          caps: config.graph.anonymous,
        }) ??
        (schemaOnly
          ? null
          : anonymousQueryRefusal(
              requestedOperation(url(), read)?.query ?? '',
              config.graph.anonymous,
            ));
      if (refusal) return graphRefusal(res, 200, refusal);
    }
    const streaming = streamRequested(req.headers.accept);
    const distinctStream = streaming && !step;
    const release = !actor
      ? anonymousSlots.tryTake(clientAddress)
      : step?.kind === 'connect'
        ? // Reservations are capped like streams; this one is dropped once its stream closes.
          () => void reservations.drop(step.token)
        : (distinctStream ? streamSlots : operationSlots).tryTake(actor.userId);
    if (!release) return distinctStream ? streamsTaken(res) : slotsTaken(res);
    try {
      let reserved: string | null = null;
      if (step?.kind === 'reserve' && actor) {
        if (!(reserved = reservations.reserve(actor))) return streamsTaken(res);
        // graphql-sse registers the token the request carries: always one minted here.
        req.headers[STREAM_TOKEN_HEADER] = reserved;
      }
      // Only a stream or a single-connection step needs its controller at once; any other
      // request makes it when something reads its signal or cancels it (a statement, the
      // deadline): `{ version }` makes none.
      const controller =
        streaming || step ? deps.cancellation.begin(res) : deps.cancellation.lazy(res);
      if (step?.kind === 'connect' && actor) {
        holdConnection(actor, step.token, controller as AbortController);
      }
      // The request's fields as Yoga's Headers, made when read (the locale, Yoga's
      // Request; the direct path reads none); the Request itself is made only for Yoga.
      // Yoga's own Request class keeps a buffered body as it is; undici's would wrap it in
      // a stream. Only a stream needs the request's signal (Yoga ends a subscription with it).
      let headers: Headers | undefined;
      const requestHeaders = () => (headers ??= new deps.graph.fetchAPI.Headers(headerRecord(req)));
      const request = () =>
        toWebRequest(
          req,
          url(),
          read,
          streaming ? controller.signal : null,
          deps.graph.fetchAPI.Request,
          requestHeaders(),
        );
      // Made when first read: by a log line, which most requests never write.
      let requestId: string | undefined;
      const idOf = () => (requestId ??= randomUUID());
      const responseCookies: string[] = [];
      const context = createContext({
        config,
        database: deps.gate.forRequest(
          callerKey(actor, clientAddress),
          () => controller.signal,
          () => requestedOperation(url(), read),
        ),
        log: () => log.child({ requestId: idOf() }),
        requestId: idOf,
        actor,
        access: deps.access,
        clientAddress,
        headers: requestHeaders,
        responseCookies,
        // Made when first read (a statement, the deadline): `{ version }` makes none.
        signal: () => controller.signal,
        cancel: (reason) => controller.abort(reason),
        events: deps.events,
        ...(step?.kind === 'operate' && actor
          ? {
              singleConnection: {
                takeStreamSlot: () => streamSlots.tryTake(actor.userId),
                refusal: () => streamCapRefusal(config.graph.streamsPerUser, Number(retryAfter)),
              },
            }
          : {}),
      });
      const sendOptions: SendOptions =
        actor || schemaOnly
          ? { cookies: responseCookies }
          : {
              cookies: responseCookies,
              cap: {
                maxBytes: config.graph.anonymous.answerMaxBytes,
                replacement: answerTooLargeBody,
              },
            };
      // The common request, one operation POSTed as JSON for a JSON answer, runs Yoga's
      // operation pipeline without its request parsing and Response objects, or (a query
      // a signed-in caller sent before) the graph's direct path (src/graph/direct.ts).
      const operation = streaming || step ? null : jsonOperation(req.headers['content-type'], read);
      const mediaType = operation && jsonMediaType(req.headers.accept);
      if (operation && mediaType) {
        const answer = await deps.graph.answerJson(operation, mediaType, request, context);
        if ('response' in answer) return await sendWebResponse(res, answer.response, sendOptions);
        return sendJsonText(res, answer.text, answer.contentType, sendOptions);
      }
      // Anything else straight to Yoga's handler; a stream, and graphql-sse's
      // single-connection steps (an adapter request hook serves them), through its adapter.
      const response = await (streaming || step ? deps.graph.fetch : deps.graph.handleOperation)(
        request(),
        context,
      );
      if (reserved && response.status !== 201) reservations.drop(reserved);
      await sendWebResponse(res, response, sendOptions);
    } finally {
      release();
    }
  };
}
