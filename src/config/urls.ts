import { accept, refuse, type Parsed } from './parsed.js';

function parseHttpUrl(text: string): URL | null {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/**
 * SVC_PUBLIC_URL: an http(s) site root (SPEC 8.2), returned as its origin with no
 * trailing slash so mail templates can append `/invite/...`. A lone `/` path is fine;
 * any other path, a query, a fragment or a user name is refused. A `?` or `#` with
 * nothing after it leaves URL's search and hash empty, so the text is checked too.
 */
export function parsePublicUrl(text: string): Parsed<string> {
  const url = parseHttpUrl(text);
  if (!url) return refuse('must be an http or https address such as https://crm.example.com');
  if (url.pathname !== '/' || /[?#]/.test(text) || url.username || url.password) {
    return refuse('must be a site root with no path, query, fragment or user name');
  }
  return accept(url.origin);
}

/**
 * SVC_CHAT_GRAPH_URL: an http(s) base address that paths are appended to, so one
 * trailing slash is stripped and a query or fragment, which appending would break, is
 * refused.
 */
export function parseBaseUrl(text: string): Parsed<string> {
  const url = parseHttpUrl(text);
  if (!url) return refuse('must be an http or https address');
  if (/[?#]/.test(text)) return refuse('must be a base address with no query or fragment');
  return accept(url.href.endsWith('/') ? url.href.slice(0, -1) : url.href);
}
