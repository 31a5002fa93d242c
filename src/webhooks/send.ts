import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { parseIp } from '../config/ip.js';
import {
  firstRefused,
  hostOf,
  hostPortListed,
  judgeAddress,
  lookupAll,
  portOf,
  type AllowList,
  type Resolve,
} from './address.js';

/** SPEC 6: the sender waits 10 seconds for an answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;

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
}

/**
 * POSTs `body` once. The name is resolved here, every address judged (SPEC 8.2), and the
 * connection made to the checked address through the `lookup` option, so no second lookup
 * can change it. No agent (so no proxy and no pooled socket), redirects never followed.
 */
export async function sendOnce(options: SendOptions): Promise<SendOutcome> {
  const url = new URL(options.url);
  const host = hostOf(url);
  const listed = hostPortListed(url, options.allow);
  let target: { address: string; family: number };
  if (parseIp(host)) {
    target = { address: host, family: host.includes(':') ? 6 : 4 };
  } else {
    let addresses: { address: string; family: number }[];
    try {
      addresses = await (options.resolve ?? lookupAll)(host);
    } catch (error) {
      return { kind: 'error', message: `lookup failed: ${(error as Error).message}` };
    }
    if (addresses.length === 0) return { kind: 'error', message: 'lookup found no address' };
    // Every answer must pass: a mixed answer could otherwise be steered by the resolver.
    const refused = firstRefused(addresses, options.allow, listed);
    if (refused) return { kind: 'refused', host, ...refused };
    target = addresses[0]!;
  }
  const verdict = judgeAddress(target.address, options.allow, listed);
  if (verdict !== null) {
    return {
      kind: 'refused',
      host,
      address: target.address,
      allowable: verdict !== 'always_refused',
    };
  }
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        target,
      ]);
    } else callback(null, target.address, target.family);
  };
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = send(
      {
        protocol: url.protocol,
        hostname: host,
        port: portOf(url),
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        agent: false,
        lookup,
        ...(url.protocol === 'https:' && !parseIp(host) ? { servername: host } : {}),
        headers: {
          ...options.headers,
          'content-type': 'application/json',
          'content-length': String(options.body.length),
        },
      },
      (res: IncomingMessage) => {
        // The answer's body is not read beyond draining it.
        res.resume();
        res.on('end', () => finish({ kind: 'answered', status: res.statusCode ?? 0 }));
        res.on('error', () => finish({ kind: 'answered', status: res.statusCode ?? 0 }));
      },
    );
    const timer = setTimeout(() => {
      finish({ kind: 'error', message: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    req.on('error', (error) => finish({ kind: 'error', message: error.message }));
    req.end(options.body);
  });
}
