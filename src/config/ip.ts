import ipaddr from 'ipaddr.js';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** Parses an IP address in its usual written form, or returns null. */
export function parseIp(text: string): IpAddress | null {
  // ipaddr.js also takes `10.1`, `0x0a.0.0.1` and octal parts; operators mean dotted
  // decimal, so anything else is refused rather than silently reinterpreted.
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  // A zone (`fe80::1%eth0`) names an interface, not a network or a peer we can match.
  if (!text.includes('%') && ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text);
  return null;
}

/** Dotted decimal, or RFC 5952 (`::1`, `2001:db8::`), the form URL parsing writes. */
export function formatIp(ip: IpAddress): string {
  return ip instanceof ipaddr.IPv6 ? ip.toRFC5952String() : ip.toString();
}

export function ipFromBytes(bytes: Uint8Array): IpAddress {
  return ipaddr.fromByteArray(Array.from(bytes));
}

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) carries, if any. */
export function unmapIpv4(ip: IpAddress): ipaddr.IPv4 | null {
  return ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress() ? ip.toIPv4Address() : null;
}
