// The one way the service makes an HTTP request to another host (docs/plugins.md "Outbound
// HTTP"): webhook deliveries and every plugin fetch. Each hop's name is resolved here, every
// address judged by SPEC 8.2's rules (./address.ts), and the connection made to the checked
// address, so no second lookup can change it (DNS rebinding). Redirects are followed only when
// asked, each hop judged again; credentials never leave the origin they were given for; time
// and the answer's size are bounded. Outcomes name hosts and addresses, never the URL (its
// path or query may carry a token) or a header's value.
import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { parseIp } from '../config/ip.js';
import {
  firstRefused,
  hostOf,
  hostPortListed,
  lookupAll,
  portOf,
  type AllowList,
  type Resolve,
} from './address.js';
import { injectTraceContext, SpanKind, tracingOn, withSpan } from '../tracing/tracing.js';

export type OutboundMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The most redirects a call may ask to follow. */
export const MAX_REDIRECTS = 10;

/** Headers that always count as credentials (besides those a call names). */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];

/** What a plugin asks for (the SDK's `fetchOutbound`); the core adds the allow list. */
export interface OutboundRequest {
  /** http or https, no user or password in it. */
  url: string;
  /** @default 'GET' */
  method?: OutboundMethod;
  headers?: Readonly<Record<string, string>>;
  body?: Buffer | string;
  /**
   * More header names whose values are credentials (`authorization`, `proxy-authorization`
   * and `cookie` always are). They are sent only to the first URL's origin (scheme, host and
   * port): a redirect elsewhere drops them for the rest of the call.
   */
  credentialHeaders?: readonly string[];
  /** Redirects to follow, each hop judged again; 0 answers a 3xx as it is. @default 0 */
  maxRedirects?: number;
  /** The whole call: every hop's lookup, connection, answer and body. @default 30000 */
  timeoutMs?: number;
  /** One step: a hop's lookup, connection and headers, or a wait between two body chunks. @default 10000 */
  stepTimeoutMs?: number;
  /** The largest body read; a larger answer is cut off and `too_large`. @default 1048576 */
  maxBytes?: number;
  /** The caller's cancellation (a request's signal). */
  signal?: AbortSignal;
}

export interface OutboundCall extends OutboundRequest {
  allow: AllowList;
  /** The setting holding `allow`, named in refusal texts. */
  allowSetting: string;
  /** Resolves a name to its addresses (tests substitute it). */
  resolve?: Resolve;
  /**
   * Reuse connections: each (origin, checked address) keeps its idle connections for a
   * few seconds (`keptAgent`), so a burst to one receiver connects once per slot rather
   * than once per request. Still judged and pinned per request as without it. @default false
   */
  keepAlive?: boolean;
}

/** A complete answer of any status, its body read (within `maxBytes`) as it arrived. */
export interface OutboundAnswer {
  kind: 'answered';
  status: number;
  headers: IncomingHttpHeaders;
  chunks: Buffer[];
  size: number;
  /** Redirects followed to reach it. */
  redirects: number;
}

export type OutboundFailure =
  | 'invalid_url'
  | 'lookup'
  | 'connect'
  | 'timeout'
  | 'aborted'
  | 'redirect_invalid'
  | 'redirect_limit';

export type OutboundResult =
  | OutboundAnswer
  /** The body passed `maxBytes` (`declared`: the Content-Length that said so, else null). */
  | { kind: 'too_large'; status: number; headers: IncomingHttpHeaders; declared: number | null }
  /** An address the rules refuse; `allowable`: an allow-list entry could open it. */
  | {
      kind: 'refused';
      host: string;
      address: string;
      allowable: boolean;
      redirects: number;
      setting: string;
    }
  /** `status`: the answer's, when its headers came before the connection broke. */
  | { kind: 'failed'; reason: OutboundFailure; message: string; status?: number };

type Failed = Extract<OutboundResult, { kind: 'failed' }>;

const failed = (reason: OutboundFailure, message: string): Failed => ({
  kind: 'failed',
  reason,
  message,
});

/** An outbound URL: http or https with a host, and no credentials. Null when it is not one. */
export function parseOutboundUrl(text: string | URL): URL | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.hostname === '' || url.username !== '' || url.password !== '') return null;
  return url;
}

function originOf(url: URL): string {
  return `${url.protocol}//${hostOf(url)}:${portOf(url)}`;
}

/**
 * Cancellation of one call: the total timer, the step timer and the caller's signal all end
 * in `signal`, and `why` says which fired first.
 */
class Clock {
  readonly controller = new AbortController();
  why: Failed | null = null;
  private readonly total: NodeJS.Timeout;
  private step: NodeJS.Timeout | undefined;
  private readonly onCallerAbort = () => this.fire(failed('aborted', 'cancelled by the caller'));

  constructor(
    totalMs: number,
    private readonly stepMs: number,
    private readonly caller?: AbortSignal,
  ) {
    this.total = setTimeout(
      () => this.fire(failed('timeout', `no answer within ${totalMs} ms`)),
      totalMs,
    );
    if (caller?.aborted) this.onCallerAbort();
    else caller?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Starts (or restarts) the step timer. */
  nextStep(): void {
    clearTimeout(this.step);
    this.step = setTimeout(
      () => this.fire(failed('timeout', `no answer within ${this.stepMs} ms`)),
      this.stepMs,
    );
  }

  fire(why: Failed): void {
    if (this.why) return;
    this.why = why;
    this.controller.abort();
  }

  dispose(): void {
    clearTimeout(this.total);
    clearTimeout(this.step);
    this.caller?.removeEventListener('abort', this.onCallerAbort);
  }
}

interface Limits {
  maxRedirects: number;
  maxBytes: number;
}

interface Hop {
  url: URL;
  method: OutboundMethod;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

type HopOutcome = OutboundResult | { kind: 'redirect'; status: number; location: string };

/**
 * Makes the call (see the module comment); never throws for anything the far side does.
 * With tracing on, the call is a client span whose `traceparent` the request carries, so
 * a receiver that traces continues the trace (a webhook delivery's, a plugin job's).
 */
export function requestOutbound(call: OutboundCall): Promise<OutboundResult> {
  if (!tracingOn()) return requestUntraced(call);
  const url = parseOutboundUrl(call.url);
  const method = call.method ?? 'GET';
  return withSpan(
    method,
    {
      kind: SpanKind.CLIENT,
      // The host only: a URL's path or query may carry a token.
      attributes: { 'http.request.method': method, 'server.address': url ? hostOf(url) : '' },
    },
    async (span) => {
      const headers = { ...call.headers };
      injectTraceContext(headers);
      const outcome = await requestUntraced({ ...call, headers });
      if ('status' in outcome && typeof outcome.status === 'number') {
        span?.setAttribute('http.response.status_code', outcome.status);
      }
      span?.setAttribute('outbound.outcome', outcome.kind);
      return outcome;
    },
  );
}

async function requestUntraced(call: OutboundCall): Promise<OutboundResult> {
  const url = parseOutboundUrl(call.url);
  if (!url) return failed('invalid_url', 'not an http or https URL without credentials');
  const limits: Limits = {
    maxRedirects: Math.min(Math.max(0, call.maxRedirects ?? 0), MAX_REDIRECTS),
    maxBytes: call.maxBytes ?? 1024 * 1024,
  };
  const clock = new Clock(call.timeoutMs ?? 30_000, call.stepTimeoutMs ?? 10_000, call.signal);
  const credentials = new Set(
    [...CREDENTIAL_HEADERS, ...(call.credentialHeaders ?? [])].map((n) => n.toLowerCase()),
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(call.headers ?? {}))
    headers[name.toLowerCase()] = value;
  const origin = originOf(url);
  let hop: Hop = {
    url,
    method: call.method ?? 'GET',
    headers,
    body: call.body === undefined ? undefined : Buffer.from(call.body),
  };
  try {
    for (let redirects = 0; ; redirects += 1) {
      const outcome = await oneHop(call, hop, clock, limits, redirects);
      if (outcome.kind === 'answered') return { ...outcome, redirects };
      if (outcome.kind !== 'redirect') return outcome;
      if (redirects >= limits.maxRedirects) {
        return failed('redirect_limit', `more than ${limits.maxRedirects} redirects`);
      }
      const next = parseOutboundUrl(resolveLocation(outcome.location, hop.url) ?? '');
      if (!next)
        return failed('redirect_invalid', 'redirected to an address that is not http or https');
      hop = redirected(hop, next, outcome.status, originOf(next) === origin ? null : credentials);
    }
  } finally {
    clock.dispose();
  }
}

function resolveLocation(location: string, base: URL): string | null {
  try {
    return new URL(location, base).href;
  } catch {
    return null;
  }
}

/**
 * The next hop: 303 (and 301/302 after a POST, as browsers do) turns into a GET without
 * the body; `drop` names the credential headers to remove when the origin changed. Once
 * dropped they stay dropped, even if a later hop comes back.
 */
function redirected(hop: Hop, url: URL, status: number, drop: Set<string> | null): Hop {
  const headers = { ...hop.headers };
  for (const name of drop ?? []) delete headers[name];
  const toGet =
    (status === 303 && hop.method !== 'HEAD') ||
    ((status === 301 || status === 302) && hop.method === 'POST');
  if (!toGet) return { url, method: hop.method, headers, body: hop.body };
  delete headers['content-type'];
  delete headers['content-length'];
  return { url, method: 'GET', headers, body: undefined };
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Resolves and judges the hop's host, then sends it to the checked address. */
async function oneHop(
  call: OutboundCall,
  hop: Hop,
  clock: Clock,
  limits: Limits,
  redirects: number,
): Promise<HopOutcome> {
  clock.nextStep();
  const target = await checkedTarget(call, hop.url, clock, redirects);
  if ('kind' in target) return target;
  const outcome = await send(hop, target, clock, limits, call.keepAlive === true);
  if (outcome.kind !== 'stale') return outcome;
  const again = await send(hop, target, clock, limits, false);
  return again.kind === 'stale' ? failed('connect', 'the connection was reset') : again;
}

type Target = { address: string; family: number };

async function checkedTarget(
  call: OutboundCall,
  url: URL,
  clock: Clock,
  redirects: number,
): Promise<Target | OutboundResult> {
  const host = hostOf(url);
  const listed = hostPortListed(url, call.allow);
  let addresses: Target[];
  if (parseIp(host)) addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  else {
    try {
      addresses = await untilCancelled((call.resolve ?? lookupAll)(host), clock.signal);
    } catch (error) {
      return clock.why ?? failed('lookup', `lookup failed: ${(error as Error).message}`);
    }
    if (addresses.length === 0) return failed('lookup', 'lookup found no address');
  }
  // Every answer must pass: a mixed answer could otherwise be steered by the resolver.
  const refused = firstRefused(addresses, call.allow, listed);
  if (refused) return { kind: 'refused', host, ...refused, redirects, setting: call.allowSetting };
  return addresses[0]!;
}

function untilCancelled<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('cancelled'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('cancelled'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Connects to `target` only: the lookup the HTTP client asks for answers the checked address. */
function pinnedLookup(target: Target): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (error: null, all: Target[]) => void)(null, [target]);
    } else callback(null, target.address, target.family);
  };
}

/** An idle kept connection lives at most this long: under the 5 s Node's servers keep one. */
const KEEP_IDLE_MS = 4000;
/** Kept agents at most; the least recently used one is let go (its idle connections time out). */
const KEPT_AGENTS_MAX = 64;
const keptAgents = new Map<string, HttpAgent>();

/**
 * The keep-alive agent of an origin and the address it was judged to reach: its pooled
 * connections all go to that address (its lookup is pinned to it), so a later answer of
 * the resolver that changes the address gets another agent and new, checked connections.
 * Agents never read proxy settings.
 */
function keptAgent(url: URL, target: Target): HttpAgent {
  const key = `${originOf(url)} ${target.address}`;
  const kept = keptAgents.get(key);
  if (kept) {
    keptAgents.delete(key);
    keptAgents.set(key, kept);
    return kept;
  }
  const options = {
    keepAlive: true,
    timeout: KEEP_IDLE_MS,
    scheduling: 'lifo' as const,
    lookup: pinnedLookup(target),
  };
  const agent = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
  keptAgents.set(key, agent);
  if (keptAgents.size > KEPT_AGENTS_MAX) {
    const oldest = keptAgents.keys().next().value;
    if (oldest !== undefined) keptAgents.delete(oldest);
  }
  return agent;
}

/**
 * One request: on a kept connection when asked (`keepAlive`), else on its own (no agent).
 * No agent reads proxy settings. A kept connection the server closed while idle fails
 * before any answer (`stale`); the hop is sent again once on a new connection.
 */
function send(
  hop: Hop,
  target: Target,
  clock: Clock,
  limits: Limits,
  keepAlive: boolean,
): Promise<HopOutcome | { kind: 'stale' }> {
  const { url } = hop;
  const host = hostOf(url);
  const headers = { ...hop.headers };
  if (hop.body) headers['content-length'] = String(hop.body.length);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<HopOutcome | { kind: 'stale' }>((resolve) => {
    if (clock.signal.aborted) return resolve(clock.why ?? failed('aborted', 'cancelled'));
    let settled = false;
    let answered = false;
    const finish = (outcome: HopOutcome | { kind: 'stale' }) => {
      if (settled) return;
      settled = true;
      clock.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const req = request(
      {
        protocol: url.protocol,
        hostname: host,
        port: portOf(url),
        path: `${url.pathname}${url.search}`,
        method: hop.method,
        agent: keepAlive ? keptAgent(url, target) : false,
        lookup: pinnedLookup(target),
        ...(url.protocol === 'https:' && !parseIp(host) ? { servername: host } : {}),
        headers,
      },
      (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (REDIRECTS.has(status) && location && limits.maxRedirects > 0) {
          res.destroy();
          req.destroy();
          return finish({ kind: 'redirect', status, location });
        }
        readBody(res, hop.method, clock, limits.maxBytes, (outcome) => {
          finish(outcome);
          if (outcome.kind !== 'answered') req.destroy();
        });
      },
    );
    const onAbort = () => {
      finish(clock.why ?? failed('aborted', 'cancelled'));
      req.destroy();
    };
    clock.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error: NodeJS.ErrnoException) => {
      const stale =
        req.reusedSocket &&
        !answered &&
        !clock.why &&
        (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      finish(stale ? { kind: 'stale' } : (clock.why ?? failed('connect', error.message)));
    });
    req.end(hop.body);
  });
}

/** Reads the answer's body within `maxBytes`, restarting the step timer at each chunk. */
function readBody(
  res: IncomingMessage,
  method: OutboundMethod,
  clock: Clock,
  maxBytes: number,
  done: (outcome: OutboundResult) => void,
): void {
  const status = res.statusCode ?? 0;
  const declared = Number(res.headers['content-length'] ?? NaN);
  if (method !== 'HEAD' && declared > maxBytes) {
    res.destroy();
    return done({ kind: 'too_large', status, headers: res.headers, declared });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  clock.nextStep();
  res.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > maxBytes) {
      over = true;
      chunks.length = 0;
      res.destroy();
      return done({ kind: 'too_large', status, headers: res.headers, declared: null });
    }
    chunks.push(chunk);
    clock.nextStep();
  });
  res.on('end', () =>
    done({ kind: 'answered', status, headers: res.headers, chunks, size, redirects: 0 }),
  );
  const cut = () => done(clock.why ?? { ...failed('connect', 'the answer was cut short'), status });
  res.on('error', cut);
  res.on('close', () => {
    if (!res.complete) cut();
  });
}

/**
 * A refused, failed or too-large outcome in a few words, safe to store and log: it names
 * hosts and addresses, never the URL or a header.
 */
export function describeOutcome(outcome: Exclude<OutboundResult, OutboundAnswer>): string {
  switch (outcome.kind) {
    case 'refused': {
      const cause = outcome.allowable
        ? `an internal address ${outcome.setting} does not allow`
        : `a link-local or cloud metadata address, refused even when ${outcome.setting} lists it`;
      return outcome.host === outcome.address
        ? `${outcome.address} is ${cause}`
        : `${outcome.host} resolves to ${outcome.address}, ${cause}`;
    }
    case 'too_large':
      return outcome.declared === null
        ? 'the answer ran past the size cap'
        : `the answer declared ${outcome.declared} bytes, over the size cap`;
    case 'failed':
      return outcome.message;
  }
}

/** The answer's body as text (UTF-8). */
export function answerText(answer: OutboundAnswer): string {
  return Buffer.concat(answer.chunks, answer.size).toString('utf8');
}

/** The answer's body parsed as JSON, or null when it is not JSON. */
export function answerJson(answer: OutboundAnswer): unknown {
  try {
    return JSON.parse(answerText(answer)) as unknown;
  } catch {
    return null;
  }
}
