import ipaddr from 'ipaddr.js';
import { formatIp, ipFromBytes, parseIp, unmapIpv4, type IpAddress } from './ip.js';
import { accept, parseList, refuse, type Parsed } from './parsed.js';
import type { CidrRange } from './types.js';

const PREFIX = /^[0-9]{1,3}$/;

/**
 * Parses `10.0.0.0/8` or `2001:db8::/32`. A bare address is refused (SPEC 8.2): the
 * operator must say how wide the range is. Host bits are masked, not refused, as Go's
 * net.ParseCIDR does: `10.1.2.3/8` means `10.0.0.0/8`. An IPv4-mapped range
 * (`::ffff:10.0.0.0/104`) becomes the IPv4 range it covers (`10.0.0.0/8`); one shorter
 * than /96 is refused because it reaches beyond the mapped block.
 */
export function parseCidr(text: string): Parsed<CidrRange> {
  const slash = text.indexOf('/');
  const address = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (slash === -1 && address) {
    return refuse('must list CIDR ranges such as 10.0.0.5/32, not bare addresses');
  }
  if (!address) return refuse('must list CIDR ranges such as 10.0.0.0/8');
  const prefixText = text.slice(slash + 1);
  const maxPrefix = address.kind() === 'ipv4' ? 32 : 128;
  const prefix = PREFIX.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix <= maxPrefix)) return refuse(`must use a prefix length from 0 to ${maxPrefix}`);
  const ipv4 = unmapIpv4(address);
  if (!ipv4) return accept(toRange(address, prefix));
  if (prefix < 96) return refuse('must not list an IPv4-mapped range shorter than /96');
  return accept(toRange(ipv4, prefix - 96));
}

/** The range's network address: ipaddr.js masks the host bits. */
function toRange(address: IpAddress, prefix: number): CidrRange {
  const cidr = `${formatIp(address)}/${prefix}`;
  const network =
    address.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(cidr)
      : ipaddr.IPv6.networkAddressFromCIDR(cidr);
  const bytes = Uint8Array.from(network.toByteArray());
  const family = bytes.length === 4 ? 4 : 6;
  return { text: `${formatIp(network)}/${prefix}`, family, bytes, prefix };
}

/**
 * Whether `ip` lies in `range`, by ipaddr.js's match. An address of the other family lies
 * in no range: the caller unmaps IPv4-mapped addresses first, as parseCidr unmaps ranges.
 */
export function rangeContains(range: CidrRange, ip: IpAddress): boolean {
  const network = ipFromBytes(range.bytes);
  return ip.kind() === network.kind() && ip.match(network, range.prefix);
}

/** Comma-separated CIDR ranges (SVC_TRUSTED_PROXIES). */
export function parseCidrList(text: string): Parsed<CidrRange[]> {
  return parseList(text, parseCidr);
}
