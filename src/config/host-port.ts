import { formatIp, parseIp } from './ip.js';
import { parsePort } from './numbers.js';
import { accept, refuse, type Parsed } from './parsed.js';
import type { HostPort } from './types.js';

// Letters, digits, hyphens and underscores: underscores are not valid in DNS host names,
// but container runtimes resolve service names such as `crm_db`, and URLs accept them.
const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

const NOT_A_HOST = 'must be a host name or an IP address';

/**
 * A host name (lowercased, as URL parsing does) or an IP address. An IPv6 address may be
 * bracketed; it is returned without brackets, in RFC 5952 form.
 */
export function parseHost(text: string): Parsed<string> {
  const bracketed = text.startsWith('[') && text.endsWith(']');
  const ip = parseIp(bracketed ? text.slice(1, -1) : text);
  if (ip && (!bracketed || ip.kind() === 'ipv6')) return accept(formatIp(ip));
  const name = text.toLowerCase();
  return !bracketed && isHostName(name) ? accept(name) : refuse(NOT_A_HOST);
}

function isHostName(name: string): boolean {
  const labels = name.split('.');
  // A name ending in a number is read as an IPv4 address by URL parsing (`1.2.3.0x4`).
  const last = labels[labels.length - 1] ?? '';
  return name.length <= 253 && labels.every((l) => LABEL.test(l)) && !/^[0-9]+$/.test(last);
}

export interface HostPortOptions {
  /** Accept `:8080`, returned with host `''`: every interface (SVC_ADDR). */
  allowEmptyHost?: boolean;
}

/** Parses `host:port`, `10.0.0.1:80` or `[::1]:8080`. */
export function parseHostPort(text: string, options: HostPortOptions = {}): Parsed<HostPort> {
  const colon = text.lastIndexOf(':');
  const hostText = colon === -1 ? text : text.slice(0, colon);
  // An unbracketed IPv6 address has colons of its own, so its "port" would be a guess.
  if (colon === -1 || (hostText.includes(':') && !hostText.startsWith('['))) {
    return refuse('must be a host and a port such as localhost:8080 ([::1]:8080 for IPv6)');
  }
  const port = parsePort(text.slice(colon + 1));
  if (!port.ok) return refuse('must end in a port from 1 to 65535');
  if (hostText === '' && options.allowEmptyHost) return accept({ host: '', port: port.value });
  const host = parseHost(hostText);
  if (!host.ok) return refuse(`must be a host and a port; the host ${NOT_A_HOST}`);
  return accept({ host: host.value, port: port.value });
}
