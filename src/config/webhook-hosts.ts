import { parseCidr } from './cidr.js';
import { parseHostPort } from './host-port.js';
import { parseIp } from './ip.js';
import { accept, mapParsed, parseList, refuse, type Parsed } from './parsed.js';
import type { CidrRange, HostPort, WebhookAllowList } from './types.js';

type Entry = { cidr: CidrRange } | { hostPort: HostPort };

/**
 * One SVC_WEBHOOK_ALLOWED_HOSTS entry: a CIDR range (`127.0.0.1/32`) or a host with a
 * port (`n8n:5678`, `[::1]:8080`). A bare address is refused like a bare proxy address,
 * and a name without a port is refused (SPEC 8.2) because a host:port entry matches
 * the URL's own host and port, so it must say which port it opens.
 */
export function parseWebhookHost(entry: string): Parsed<Entry> {
  if (entry.includes('/')) return mapParsed(parseCidr(entry), (cidr) => ({ cidr }));
  if (parseIp(entry)) {
    return refuse(
      'must list CIDR ranges such as 10.0.0.5/32 or hosts with a port, not bare addresses',
    );
  }
  if (!entry.includes(':')) return refuse('must give each host name a port, such as n8n:5678');
  return mapParsed(parseHostPort(entry), (hostPort) => ({ hostPort }));
}

export function parseWebhookAllowList(text: string): Parsed<WebhookAllowList> {
  const entries = parseList(text, parseWebhookHost);
  if (!entries.ok) return entries;
  const allowedCidrs: CidrRange[] = [];
  const allowedHostPorts: HostPort[] = [];
  for (const entry of entries.value) {
    if ('cidr' in entry) allowedCidrs.push(entry.cidr);
    else allowedHostPorts.push(entry.hostPort);
  }
  return accept({ allowedCidrs, allowedHostPorts });
}
