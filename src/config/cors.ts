import { mapParsed, parseList, refuse, type Parsed } from './parsed.js';
import { parsePublicUrl } from './urls.js';

/**
 * One entry of SVC_CORS_ORIGINS: an http(s) origin, canonicalised as SVC_PUBLIC_URL is
 * (lower case, default port dropped, no trailing slash), since browsers send the
 * `Origin` header in that form and it is compared as text. `*` and `null` are refused:
 * the session cookie is credentialed, so every listed origin may read a signed-in
 * user's data, and `null` is what sandboxed frames and local files send, whoever wrote
 * them. A `*` inside a host (`https://*.example.com`) parses as a URL but matches no
 * browser's origin, so it is refused with the same reason.
 */
export function parseCorsOrigin(text: string): Parsed<string> {
  if (text.includes('*')) {
    return refuse('must list exact origins; * is refused because the session cookie is sent');
  }
  if (text.toLowerCase() === 'null') {
    return refuse('must list http or https origins; null is refused (any sandboxed page sends it)');
  }
  const origin = parsePublicUrl(text);
  if (origin.ok) return origin;
  if (!URL.canParse(text) || !/^https?:$/i.test(new URL(text).protocol)) {
    return refuse('must list http or https origins such as https://app.example.com');
  }
  return refuse('must list origins with no path, query, fragment or user name');
}

/**
 * SVC_CORS_ORIGINS: comma-separated origins whose pages may read the graph with the
 * session cookie. An origin listed twice counts once.
 */
export function parseCorsOrigins(text: string): Parsed<string[]> {
  return mapParsed(parseList(text, parseCorsOrigin), (origins) => [...new Set(origins)]);
}
