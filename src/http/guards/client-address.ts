import type { CidrRange } from '../../config.js';
import { rangeContains } from '../../config/cidr.js';
import { formatIp, parseIp, unmapIpv4, type IpAddress } from '../../config/ip.js';

/** Addresses read lately: a peer is read on every request, an IPv6 one in ~25 µs. */
const lately = new Map<string, IpAddress | null>();
const LATELY_MAX = 1024;

/** An address as written, with an IPv4-mapped IPv6 address (`::ffff:10.1.2.3`) unmapped. */
function readAddress(text: string): IpAddress | null {
  let ip = lately.get(text);
  if (ip === undefined) {
    const parsed = parseIp(text);
    ip = parsed && (unmapIpv4(parsed) ?? parsed);
    if (lately.size >= LATELY_MAX) lately.clear();
    lately.set(text, ip);
  }
  return ip;
}

/**
 * Whether `address` lies in `range`. An IPv4-mapped address is matched as the IPv4 address it
 * carries, as parseCidr stores an IPv4-mapped range as its IPv4 range. A malformed address
 * lies in no range.
 */
export function cidrContains(range: CidrRange, address: string): boolean {
  const ip = readAddress(address);
  return ip !== null && rangeContains(range, ip);
}

function trusted(ip: IpAddress, ranges: CidrRange[]): boolean {
  return ranges.some((range) => rangeContains(range, ip));
}

const IPV4_WITH_PORT = /^([0-9.]+):[0-9]{1,5}$/;
const BRACKETED_IPV6 = /^\[([^\]]+)\](?::[0-9]{1,5})?$/;

/**
 * One `X-Forwarded-For` hop. Some proxies append the port (`10.1.2.3:5123`, `[::1]:5123`);
 * it still names one address, so it is read, not treated as malformed.
 */
function readHop(text: string): IpAddress | null {
  const match = IPV4_WITH_PORT.exec(text) ?? BRACKETED_IPV6.exec(text);
  return readAddress(match?.[1] ?? text);
}

function forwardedHops(forwardedFor: string | string[]): string[] {
  const joined = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  // RFC 9110 5.6.1: a recipient ignores empty list elements (`a, , b`).
  return joined
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
}

/**
 * The client address a request is counted against (login limiter, anonymous budget).
 *
 * The direct peer, unless it lies in a trusted range (SVC_TRUSTED_PROXIES). Then
 * `X-Forwarded-For` is walked from the right, skipping trusted hops: the first untrusted hop
 * is the client, since every hop left of it may be written by the client itself. If every
 * hop is trusted the leftmost answers. A malformed hop ends the walk at the last good hop
 * (the nearest trusted proxy), so junk never chooses the address. Addresses are answered
 * unmapped and in canonical form (`::ffff:10.1.2.3` -> `10.1.2.3`, `2001:DB8::1` ->
 * `2001:db8::1`), so one client has one key. A peer Node could not name (a socket already
 * gone) answers `''`; a peer that does not parse answers as given. Not proxy-addr's walk,
 * whose answers differ on malformed, ported and non-canonical hops (docs/decisions.md).
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustedRanges: CidrRange[],
): string {
  if (peer === undefined) return '';
  const peerIp = readAddress(peer);
  if (!peerIp) return peer;
  if (forwardedFor === undefined || !trusted(peerIp, trustedRanges)) return formatIp(peerIp);
  let answer = peerIp;
  const hops = forwardedHops(forwardedFor);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = readHop(hops[i] ?? '');
    if (!hop) break;
    answer = hop;
    if (!trusted(hop, trustedRanges)) break;
  }
  return formatIp(answer);
}
