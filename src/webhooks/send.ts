import type { AllowList, Resolve } from '../outbound/address.js';
import { requestOutbound } from '../outbound/request.js';

/** SPEC 6: the sender waits 10 seconds for an answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** The most of a receiver's answer read; the status is all a delivery keeps. */
const ANSWER_MAX_BYTES = 64 * 1024;

export type SendOutcome =
  | { kind: 'answered'; status: number }
  /** `allowable`: an allow-list entry could open the address (not link-local or metadata). */
  | { kind: 'refused'; host: string; address: string; allowable: boolean }
  | { kind: 'error'; message: string };

export interface SendOptions {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
  allow: AllowList;
  timeoutMs?: number;
  /** Resolves a name to its addresses (tests substitute it). */
  resolve?: Resolve;
  /** Reuse connections to the same origin and checked address (`requestOutbound`). */
  keepAlive?: boolean;
}

/**
 * POSTs `body` once through the shared outbound request (src/outbound/request.ts): every
 * address judged by SPEC 8.2 under SVC_WEBHOOK_ALLOWED_HOSTS, the connection pinned to the
 * checked address (kept alive between deliveries when asked), no proxy, and redirects never followed (SPEC 6: a 3xx is an answer that
 * leaves the delivery pending).
 */
export async function sendOnce(options: SendOptions): Promise<SendOutcome> {
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const outcome = await requestOutbound({
    url: options.url,
    method: 'POST',
    body: options.body,
    headers: { ...options.headers, 'content-type': 'application/json' },
    maxRedirects: 0,
    timeoutMs,
    stepTimeoutMs: timeoutMs,
    maxBytes: ANSWER_MAX_BYTES,
    allow: options.allow,
    allowSetting: 'SVC_WEBHOOK_ALLOWED_HOSTS',
    resolve: options.resolve,
    keepAlive: options.keepAlive,
  });
  switch (outcome.kind) {
    case 'answered':
    case 'too_large':
      // A long answer body still answered: its status is in hand.
      return { kind: 'answered', status: outcome.status };
    case 'refused':
      return {
        kind: 'refused',
        host: outcome.host,
        address: outcome.address,
        allowable: outcome.allowable,
      };
    case 'failed':
      // Cut short after its headers: the receiver answered, as the sender always counted it.
      if (outcome.reason === 'connect' && outcome.status !== undefined) {
        return { kind: 'answered', status: outcome.status };
      }
      return { kind: 'error', message: outcome.message };
  }
}
