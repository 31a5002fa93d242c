// Webhook URLs (SPEC 2 webhook_url_invalid, webhook_url_internal): parsed and judged at
// registration. The address rules themselves (SPEC 8.2) live in src/outbound/address.ts,
// which every outbound connection shares; they are re-exported here for the webhook code.
import { parseIp } from '../config/ip.js';
import {
  firstRefused,
  hostOf,
  hostPortListed,
  judgeAddress,
  lookupAll,
  type AddressVerdict,
  type AllowList,
  type RefusedAddress,
  type Resolve,
} from '../outbound/address.js';

export {
  hostPortListed,
  judgeAddress,
  type AddressVerdict,
  type AllowList,
  type RefusedAddress,
  type Resolve,
} from '../outbound/address.js';

/** A webhook URL: http or https with a host, and no credentials. Null when it does not parse. */
export function parseWebhookUrl(text: string): URL | null {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.hostname === '' || url.username !== '' || url.password !== '') return null;
  return url;
}

/**
 * Registration check of an IP literal (webhook_url_internal); null for a name, which
 * `judgeRegistration` looks up.
 */
export function registrationVerdict(url: URL, allow: AllowList): AddressVerdict {
  const host = hostOf(url);
  if (!parseIp(host)) return null;
  return judgeAddress(host, allow, hostPortListed(url, allow));
}

/** How long registration waits for a lookup before accepting the name unchecked. */
export const REGISTRATION_LOOKUP_TIMEOUT_MS = 5000;

/**
 * What registration makes of a URL. `refused`: the literal, or an address the name
 * resolves to, is refused (the same rule delivery applies: one refused address refuses).
 * `unknown_host`: the resolver says the name does not exist or has no address.
 * `unchecked`: the lookup failed otherwise (a temporary failure, a timeout), or the name
 * is unknown but a host:port entry lists it; accepted, and judged at each delivery.
 */
export type RegistrationJudgement =
  | { kind: 'accepted' }
  | ({ kind: 'refused'; host: string } & RefusedAddress)
  | { kind: 'unknown_host'; host: string }
  | { kind: 'unchecked'; host: string; error: string };

/** getaddrinfo's "no such name" and "no address" (Node reports both as ENOTFOUND). */
const UNKNOWN_HOST_CODES = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * Judges a webhook URL at registration (and whenever its URL would change): an IP literal
 * by the rules alone, a name by looking it up now. Delivery looks it up again, since DNS
 * answers change.
 */
export async function judgeRegistration(
  url: URL,
  allow: AllowList,
  options: { resolve?: Resolve; timeoutMs?: number } = {},
): Promise<RegistrationJudgement> {
  const host = hostOf(url);
  const listed = hostPortListed(url, allow);
  if (parseIp(host)) {
    const refused = firstRefused([{ address: host }], allow, listed);
    return refused ? { kind: 'refused', host, ...refused } : { kind: 'accepted' };
  }
  let addresses: { address: string }[];
  try {
    addresses = await withTimeout(
      (options.resolve ?? lookupAll)(host),
      options.timeoutMs ?? REGISTRATION_LOOKUP_TIMEOUT_MS,
    );
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    // A listed name may not resolve yet (a container not started): the operator vouched.
    if (code && UNKNOWN_HOST_CODES.has(code) && !listed) return { kind: 'unknown_host', host };
    return { kind: 'unchecked', host, error: message };
  }
  if (addresses.length === 0) {
    return listed
      ? { kind: 'unchecked', host, error: 'no address' }
      : { kind: 'unknown_host', host };
  }
  const refused = firstRefused(addresses, allow, listed);
  return refused ? { kind: 'refused', host, ...refused } : { kind: 'accepted' };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`lookup took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The end of a refused delivery's `lastError` and log line: why, and what could open it. */
export function refusalCause(refused: RefusedAddress): string {
  return refused.allowable
    ? 'an internal address SVC_WEBHOOK_ALLOWED_HOSTS does not allow'
    : 'a link-local or cloud metadata address, refused even when SVC_WEBHOOK_ALLOWED_HOSTS lists it';
}
