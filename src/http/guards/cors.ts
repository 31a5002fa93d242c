import type { IncomingMessage, ServerResponse } from 'node:http';

export interface CorsRequestHeaders {
  origin?: string;
  'access-control-request-headers'?: string;
}

/**
 * GET carries event streams (and queries with SVC_DEV_GRAPHIQL), POST the rest; PUT and
 * DELETE reserve and stop graphql-sse single-connection streams (docs/events.md).
 */
const METHODS = 'GET, POST, PUT, DELETE';
// Long enough to spare a listed page a preflight per operation, short enough that an
// origin the operator removes stops working within minutes.
const PREFLIGHT_MAX_AGE_SECONDS = '600';

/** Whether `origin` (an `Origin` header, as browsers write it) is one SVC_CORS_ORIGINS lists. */
export function isListedOrigin(origin: string | undefined, origins: readonly string[]): boolean {
  return origin !== undefined && origins.includes(origin);
}

/**
 * The CORS headers of a graph answer (SVC_CORS_ORIGINS). None at all while no origin is
 * listed: the service's own pages need none. Once one is listed every answer varies by
 * `Origin`, so caches key on it; only a listed origin, compared exactly as browsers send
 * it, is named back, with credentials, since the session cookie is what it reads with.
 * `Retry-After` is exposed so a page can honour a 429. A preflight (OPTIONS) also names
 * the methods and echoes the headers the page asked for: the operator vouched for the
 * origin, and no header a page can set widens what its request may do.
 */
export function corsHeaders(
  method: string,
  headers: CorsRequestHeaders,
  origins: readonly string[],
): Record<string, string> {
  if (origins.length === 0) return {};
  if (!isListedOrigin(headers.origin, origins)) return { vary: 'Origin' };
  const allowed = {
    vary: 'Origin',
    'access-control-allow-origin': headers.origin as string,
    'access-control-allow-credentials': 'true',
  };
  if (method !== 'OPTIONS') return { ...allowed, 'access-control-expose-headers': 'Retry-After' };
  const requested = headers['access-control-request-headers'];
  return {
    ...allowed,
    vary: 'Origin, Access-Control-Request-Headers',
    'access-control-allow-methods': METHODS,
    ...(requested ? { 'access-control-allow-headers': requested } : {}),
    'access-control-max-age': PREFLIGHT_MAX_AGE_SECONDS,
  };
}

/**
 * Puts the CORS headers on `res` (they are merged into whatever answer follows, refusals
 * included, so a listed page can read why it was refused) and answers a preflight at
 * once, before credentials or slots: browsers send none with it. Every OPTIONS gets 204;
 * without the headers above the browser stops there. Answers true once it has answered.
 */
export function applyCors(
  req: IncomingMessage,
  res: ServerResponse,
  origins: readonly string[],
): boolean {
  const method = req.method ?? 'GET';
  for (const [name, value] of Object.entries(corsHeaders(method, req.headers, origins))) {
    res.setHeader(name, value);
  }
  if (method !== 'OPTIONS') return false;
  // RFC 9110 forbids Content-Length on a 204, and it has no body to frame.
  res.writeHead(204);
  res.end();
  return true;
}
