import ipaddr from 'ipaddr.js';
import type { CidrRange, HostPort } from '../config.js';
import { formatIp, parseIp, unmapIpv4, type IpAddress } from '../config/ip.js';
import { cidrContains } from '../http/guards/client-address.js';

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

const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The address as judged: an IPv4-mapped IPv6 address as the IPv4 it carries, an address
 * of the well-known NAT64 prefix 64:ff9b::/96 as the IPv4 it embeds in its last 32 bits.
 */
export function judgedAs(ip: IpAddress): IpAddress {
  const mapped = unmapIpv4(ip);
  if (mapped) return mapped;
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).match(NAT64)) {
    return ipaddr.fromByteArray((ip as ipaddr.IPv6).toByteArray().slice(12));
  }
  return ip;
}

/**
 * Internal: anything ipaddr.js does not call plain `unicast` (loopback, private, shared
 * 100.64/10, reserved, link-local, multicast, unspecified, broadcast, and their IPv6
 * counterparts such as unique-local fc00::/7).
 */
export function isInternal(ip: IpAddress): boolean {
  return judgedAs(ip).range() !== 'unicast';
}

export function isAlwaysRefused(ip: IpAddress): boolean {
  const judged = judgedAs(ip);
  if (ALWAYS_REFUSED.has(formatIp(judged))) return true;
  return ALWAYS_REFUSED_RANGES.some(
    ([range, bits]) => range.kind() === judged.kind() && judged.match(range, bits),
  );
}

/** Why an address may not be connected to, or null when it may. */
export type AddressVerdict = null | 'always_refused' | 'internal';

/**
 * Judges the address about to be connected to. `hostPortListed`: the URL's host and port
 * match a host:port entry (checked before lookup), which opens internal addresses but
 * never the always-refused ones. A CIDR entry opens the internal addresses it contains,
 * on every port.
 */
export function judgeAddress(
  address: string,
  allow: AllowList,
  hostPortListed: boolean,
): AddressVerdict {
  const ip = parseIp(address);
  if (!ip) return 'internal';
  if (isAlwaysRefused(ip)) return 'always_refused';
  if (hostPortListed || !isInternal(ip)) return null;
  const judged = formatIp(judgedAs(ip));
  return allow.allowedCidrs.some((range) => cidrContains(range, judged)) ? null : 'internal';
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
 * Registration check (webhook_url_internal): only an IP literal can be judged now; a name
 * is judged at each delivery, after lookup, against the address connected to.
 */
export function registrationVerdict(url: URL, allow: AllowList): AddressVerdict {
  const host = hostOf(url);
  if (!parseIp(host)) return null;
  return judgeAddress(host, allow, hostPortListed(url, allow));
}
