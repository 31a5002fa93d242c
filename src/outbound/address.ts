// SPEC 8.2's address rules for every outbound connection (webhook deliveries and plugin
// fetches, src/outbound/request.ts): which resolved addresses may be connected to.
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import type { CidrRange, HostPort } from '../config.js';
import { rangeContains } from '../config/cidr.js';
import { formatIp, parseIp, type IpAddress } from '../config/ip.js';

/** An allow list: SVC_WEBHOOK_ALLOWED_HOSTS (config.webhooks) or SVC_OUTBOUND_ALLOWED_HOSTS (config.outbound). */
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
