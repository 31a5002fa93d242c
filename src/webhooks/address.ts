import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import type { CidrRange, HostPort } from '../config.js';
import { rangeContains } from '../config/cidr.js';
import { formatIp, parseIp, type IpAddress } from '../config/ip.js';

/** SVC_WEBHOOK_ALLOWED_HOSTS, as config.webhooks holds it. */
export interface AllowList {
  allowedCidrs: readonly CidrRange[];
  allowedHostPorts: readonly HostPort[];
}

/**
 * Refused even when listed (SPEC 8.2): link-local ranges and the cloud-provider metadata
 * addresses. Neighbours of these stay open to an entry listing their range.
 */
const ALWAYS_REFUSED_RANGES: [IpAddress, number][] = [
  ipaddr.parseCIDR('169.254.0.0/16'),
  ipaddr.parseCIDR('fe80::/10'),
];
const ALWAYS_REFUSED = new Set(
  [
    '100.100.100.200',
    '168.63.129.16',
    '192.0.0.192',
    'fd00:ec2::23',
    'fd00:ec2::254',
    'fd20:ce::254',
    'fd00:a9fe:a9fe::1',
    'fd00:42::42',
  ].map((text) => formatIp(ipaddr.parse(text))),
);

/**
 * IPv4-compatible addresses (`::a.b.c.d`, RFC 4291 2.5.5.1): deprecated, but a stack that
 * still tunnels them reaches the IPv4 address.
 */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** The IPv4 address in bytes `start`..`start + 3` of `ip`, each byte XORed with `flip`. */
function ipv4At(ip: ipaddr.IPv6, start: number, flip = 0): ipaddr.IPv4 {
  const bytes = ip.toByteArray().slice(start, start + 4);
  return new ipaddr.IPv4(bytes.map((byte) => byte ^ flip));
}

/**
 * The addresses an address is judged as. An IPv6 address that carries an IPv4 address
 * reaches that IPv4 host through a translator or tunnel, so it is judged as the IPv4:
 * IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48 (last 32 bits),
 * IPv4-compatible ::/96 (last 32 bits) and 6to4 2002::/16 (bits 16-48). A Teredo address
 * (2001::/32) carries two, its server (bits 32-64) and its client (the last 32 bits,
 * inverted), and is judged as both. `::` and `::1` keep their IPv6 meaning, so an entry
 * listing `::1/128` still opens the IPv6 loopback. (ipaddr.js reads the dotted `::a.b.c.d`,
 * as Node's resolver writes a compatible address, as mapped: the same IPv4 either way.)
 */
export function judgedAs(ip: IpAddress): IpAddress[] {
  if (ip.kind() === 'ipv4') return [ip];
  const v6 = ip as ipaddr.IPv6;
  switch (v6.range()) {
    case 'ipv4Mapped':
    case 'rfc6052':
      return [ipv4At(v6, 12)];
    case '6to4':
      return [ipv4At(v6, 2)];
    case 'teredo':
      return [ipv4At(v6, 4), ipv4At(v6, 12, 0xff)];
    case 'unicast':
      // `::` and `::1` are not here: ipaddr.js names them unspecified and loopback.
      return v6.match(IPV4_COMPATIBLE) ? [ipv4At(v6, 12)] : [v6];
    default:
      return [v6];
  }
}

/**
 * Internal: anything ipaddr.js does not call plain `unicast` (loopback, private, shared
 * 100.64/10, reserved, link-local, multicast, unspecified, broadcast, and their IPv6
 * counterparts such as unique-local fc00::/7), judged on every address `judgedAs` finds.
 */
function internal(judged: IpAddress): boolean {
  return judged.range() !== 'unicast';
}

function alwaysRefused(judged: IpAddress): boolean {
  if (ALWAYS_REFUSED.has(formatIp(judged))) return true;
  return ALWAYS_REFUSED_RANGES.some(
    ([range, bits]) => range.kind() === judged.kind() && judged.match(range, bits),
  );
}

export function isInternal(ip: IpAddress): boolean {
  return judgedAs(ip).some(internal);
}

export function isAlwaysRefused(ip: IpAddress): boolean {
  return judgedAs(ip).some(alwaysRefused);
}

/** Why an address may not be connected to, or null when it may. */
export type AddressVerdict = null | 'always_refused' | 'internal';

/**
 * Judges the address about to be connected to. `hostPortListed`: the URL's host and port
 * match a host:port entry (checked before lookup), which opens internal addresses but
 * never the always-refused ones. A CIDR entry opens the internal addresses it contains,
 * on every port; it is matched against the judged address (`judgedAs`), so 127.0.0.1/32
 * also opens `::ffff:127.0.0.1` and `64:ff9b::7f00:1`, and a Teredo address passes only
 * when each internal address it carries is listed.
 */
export function judgeAddress(
  address: string,
  allow: AllowList,
  hostPortListed: boolean,
): AddressVerdict {
  const ip = parseIp(address);
  if (!ip) return 'internal';
  const judged = judgedAs(ip);
  if (judged.some(alwaysRefused)) return 'always_refused';
  if (hostPortListed) return null;
  const listed = (one: IpAddress) => allow.allowedCidrs.some((range) => rangeContains(range, one));
  return judged.every((one) => !internal(one) || listed(one)) ? null : 'internal';
}

/** The host of a URL without IPv6 brackets, lowercased. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

/** The URL's port, or 80 for http and 443 for https. */
export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Whether a host:port entry names the URL's own host and port (before any lookup). */
export function hostPortListed(url: URL, allow: AllowList): boolean {
  const host = hostOf(url);
  const port = portOf(url);
  const ip = parseIp(host);
  return allow.allowedHostPorts.some((entry) => {
    if (entry.port !== port) return false;
    if (entry.host === host) return true;
    const entryIp = parseIp(entry.host);
    return ip !== null && entryIp !== null && formatIp(entryIp) === formatIp(ip);
  });
}

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

/** Resolves a name to every address it has (tests substitute it). */
export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;

/**
 * The system resolver (getaddrinfo: /etc/hosts, then DNS), every address, in its order:
 * what the connection would use.
 */
export const lookupAll: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

/** An address the rules refuse; `allowable`: an allow-list entry could open it. */
export interface RefusedAddress {
  address: string;
  allowable: boolean;
}

/** The first of `addresses` the rules refuse, or null when every one may be connected to. */
export function firstRefused(
  addresses: readonly { address: string }[],
  allow: AllowList,
  hostPortListed: boolean,
): RefusedAddress | null {
  for (const { address } of addresses) {
    const verdict = judgeAddress(address, allow, hostPortListed);
    if (verdict !== null) return { address, allowable: verdict !== 'always_refused' };
  }
  return null;
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
