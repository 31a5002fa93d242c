import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { resolveCredential } from '../auth/credentials.js';
import { createContext, type Actor } from '../context.js';
import { GRAPH_PATH } from '../graph/server.js';
import type { GraphRouteDeps } from '../http/graph-route.js';
import { readBody, sendJson } from '../http/node-fetch-bridge.js';
import { refuse } from '../errors.js';
import { createMcpServer, type GraphAnswer, type GraphRunner } from './server.js';

export const MCP_PATH = '/api/mcp';

/**
 * The agent endpoint runs graph operations the way the graph route does, so it takes the
 * same services, its per-user operation slots (SVC_GRAPH_OPERATIONS_PER_USER) among them.
 */
export type McpRouteDeps = GraphRouteDeps;

function rpcError(res: ServerResponse, status: number, code: number, message: string) {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}

/**
 * POST /api/mcp (SPEC 4.4): stateless Streamable HTTP, one MCP server and transport per
 * request. A bearer token is required before anything runs; tools run graph operations
 * as the token's user, so scopes and capabilities apply as on /api/graphql.
 */
export function createMcpRoute(deps: McpRouteDeps) {
  const { config, log } = deps;
  const retryAfter = Math.max(1, Math.ceil(config.graph.retryAfterMs / 1000));

  /** Graph operations as `actor`, through Yoga with the context the graph route builds. */
  function runnerFor(
    actor: Actor,
    authorization: string,
    clientAddress: string,
    signal: AbortSignal,
  ): GraphRunner {
    return async (query, variables) => {
      const operation = new AbortController();
      const request = new deps.graph.fetchAPI.Request(`http://internal${GRAPH_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ query, variables }),
      });
      const requestId = randomUUID();
      const operationSignal = AbortSignal.any([signal, operation.signal]);
      const response = await deps.graph.fetch(
        request,
        createContext({
          config,
          database: deps.gate.forRequest(actor.userId, operationSignal, () => ({
            query,
            operationName: null,
          })),
          log: () => log.child({ requestId, mcp: true }),
          requestId,
          actor,
          access: deps.access,
          clientAddress,
          headers: request.headers,
          responseCookies: [],
          signal: operationSignal,
          cancel: (reason) => operation.abort(reason),
          events: deps.events,
        }),
      );
      return (await response.json()) as GraphAnswer;
    };
  }

  return async function serveMcp(
    req: IncomingMessage,
    res: ServerResponse,
    clientAddress: string,
  ): Promise<void> {
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return rpcError(
        res,
        405,
        -32000,
        'method not allowed: this endpoint is stateless, POST only',
      );
    }
    const authorization = req.headers.authorization;
    if (authorization === undefined || authorization.trim() === '') {
      res.setHeader('www-authenticate', 'Bearer');
      return sendJson(res, 401, { error: 'bearer token required' });
    }
    // Only the bearer counts here: a session cookie never reaches the agent endpoint.
    const credential = await resolveCredential(
      deps.database.db,
      deps.access,
      { authorization },
      deps.credentials,
    );
    const actor = 'actor' in credential ? credential.actor : null;
    const read = await readBody(req, config.graph.bodyMaxBytes);
    if (read === 'too-large') {
      res.setHeader('connection', 'close');
      return rpcError(res, 413, -32600, 'request body too large');
    }
    let message: unknown;
    try {
      message = JSON.parse(read.toString('utf8'));
    } catch {
      return rpcError(res, 400, -32700, 'parse error');
    }

    // A signed-in agent's request holds one of its user's operation slots while it runs,
    // like a request to /api/graphql; over the cap it is refused before any tool runs.
    const release = actor ? deps.operationSlots.tryTake(actor.userId) : () => {};
    if (!release) {
      res.setHeader('retry-after', String(retryAfter));
      return rpcError(res, 429, -32000, refuse('rate_limited', { retryAfter }).message);
    }
    // The client may have gone while the body was read: then 'close' has fired already.
    if (res.closed) return release();
    res.once('close', release);

    const controller = deps.cancellation.begin(res);
    const server = createMcpServer(
      actor ? runnerFor(actor, authorization, clientAddress, controller.signal) : null,
    );
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    if (actor) {
      const scopes = actor.token?.scopes ? [...actor.token.scopes] : [];
      const auth: AuthInfo = {
        token: authorization.replace(/^Bearer\s+/i, '').trim(),
        clientId: actor.token?.id ?? actor.userId,
        scopes,
      };
      (req as IncomingMessage & { auth?: AuthInfo }).auth = auth;
    }
    await transport.handleRequest(req, res, message);
  };
}
