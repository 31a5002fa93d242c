import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../log.js';
import { sendJson } from '../node-fetch-bridge.js';
import { isListedOrigin } from './cors.js';

/** The 403 body of a refused cross-origin write (SPEC 5, 7.2). */
export const CROSS_ORIGIN_BODY = Object.freeze({
  error: 'cross-origin request refused',
  code: 'request_cross_origin',
} as const);

export type CrossOriginReason = 'fetch-site' | 'origin';

export interface CrossOriginHeaders {
  'sec-fetch-site'?: string;
  origin?: string;
  host?: string;
}

// Methods are case-sensitive (RFC 9110 9.1): a `get` is not a read, so it is checked.
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };
// A Host header is `host[:port]`; anything with userinfo, a path or stray brackets is not.
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/?#@[\]\\]+)(?::([0-9]{1,5}))?$/;

/**
 * Whether a browser wrote from a page at another origin (SPEC 5, "Cross-origin writes").
 * Reads pass, as does a request carrying neither `Sec-Fetch-Site` nor `Origin` (not a
 * browser, or one too old to say). `Sec-Fetch-Site` wins when present: only `same-origin`
 * passes. Otherwise the `Origin` host and port must equal the `Host` header's; schemes are
 * not compared (a TLS-terminating proxy makes them differ), and `X-Forwarded-Host` is never
 * read, since any client can set it. An `Origin` listed in `listedOrigins`
 * (SVC_CORS_ORIGINS) passes whatever `Sec-Fetch-Site` says: the operator named its pages
 * as the service's own, and a page cannot forge its Origin. Answers the reason to log,
 * or null to let it pass.
 */
export function crossOriginRefusal(
  method: string,
  headers: CrossOriginHeaders,
  listedOrigins: readonly string[] = [],
): null | { reason: CrossOriginReason } {
  if (READS.has(method)) return null;
  if (isListedOrigin(headers.origin, listedOrigins)) return null;
  const fetchSite = headers['sec-fetch-site'];
  const origin = headers.origin;
  if (fetchSite === undefined && origin === undefined) return null;
  if (fetchSite !== undefined) return fetchSite === 'same-origin' ? null : { reason: 'fetch-site' };
  return sameHostAndPort(origin ?? '', headers.host) ? null : { reason: 'origin' };
}

/**
 * Only an http or https Origin can match: `null` (an opaque origin) does not parse, and
 * another scheme has no default port to compare. Hostnames are compared as URL parsing
 * normalises them (lowercase, punycode, canonical IPv6), for both headers.
 */
function sameHostAndPort(originText: string, hostHeader: string | undefined): boolean {
  const origin = URL.canParse(originText) ? new URL(originText) : null;
  const defaultPort = origin ? DEFAULT_PORTS[origin.protocol] : undefined;
  if (!origin || defaultPort === undefined || hostHeader === undefined) return false;
  const host = HOST_HEADER.exec(hostHeader);
  const hostName = host?.[1];
  if (!hostName || !URL.canParse(`http://${hostName}`)) return false;
  const originPort = origin.port === '' ? defaultPort : Number(origin.port);
  const hostPort = host[2] === undefined ? defaultPort : Number(host[2]);
  return new URL(`http://${hostName}`).hostname === origin.hostname && hostPort === originPort;
}

/** Answers a refused cross-origin write and logs the warning SPEC 5 asks for. */
export function refuseCrossOrigin(
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
  refusal: { reason: CrossOriginReason },
): void {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  log.warn(
    { reason: refusal.reason, path, origin: req.headers.origin },
    'cross-origin write refused',
  );
  sendJson(res, 403, CROSS_ORIGIN_BODY);
}
