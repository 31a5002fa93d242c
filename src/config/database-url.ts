import { parseHost, parseHostPort } from './host-port.js';
import { accept, refuse, type Parsed } from './parsed.js';
import type { Config } from './types.js';

export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];

/**
 * `target_session_attrs` the service may be given: it writes, so only a server that takes
 * writes will do (`read-write`, the default, or `primary`: not a standby).
 */
export const SESSION_ATTRS = ['read-write', 'primary'];

const SCHEME = /^postgres(ql)?:\/\//i;
const FORM = 'postgres://user:password@host:5432/db';
// A `%` not followed by two hex digits; decodeURIComponent also catches invalid UTF-8.
const BAD_ESCAPE = /%(?![0-9a-f]{2})/i;

/**
 * Checks SVC_DATABASE_URL (SPEC 8.2) and returns it unchanged. Our own splitting, not
 * WHATWG URL: URL parsing silently takes the last `@` as the separator, while the
 * driver splits at the first, so a bare `@` in a password would reach the wrong host.
 * The password and port are optional (trust or peer authentication, port 5432);
 * messages never quote the value, because it carries the password. Several hosts,
 * comma-separated (`h1:5432,h2:5432`), make a failover list (docs/operations.md).
 */
export function parseDatabaseUrl(text: string): Parsed<string> {
  const scheme = SCHEME.exec(text);
  if (!scheme) return refuse(`must start with postgres:// or postgresql://, as ${FORM}`);
  const rest = text.slice(scheme[0].length);
  const at = rest.indexOf('@');
  if (at === -1) return refuse(`must name a user before the host, as ${FORM}`);
  if (rest.indexOf('@', at + 1) !== -1) {
    return refuse('has a bare @ in the user or password; write it as %40');
  }
  const userInfo = checkUserInfo(rest.slice(0, at));
  if (!userInfo.ok) return userInfo;
  const location = checkLocation(rest.slice(at + 1));
  return location.ok ? accept(text) : location;
}

function checkUserInfo(userInfo: string): Parsed<null> {
  if (/[/?#[\]]/.test(userInfo)) {
    return refuse(
      'has a bare reserved sign in the user or password; write / as %2F, ? as %3F, # as %23',
    );
  }
  const colon = userInfo.indexOf(':');
  if ((colon === -1 ? userInfo : userInfo.slice(0, colon)) === '') {
    return refuse(`must name a user before the host, as ${FORM}`);
  }
  if (!decodes(userInfo))
    return refuse('has a bad percent escape in the user or password; write % as %25');
  return accept(null);
}

function checkLocation(location: string): Parsed<null> {
  if (location.includes('#')) return refuse('must not end in a fragment (#...)');
  const [path = '', query] = splitOnce(location, '?');
  const [hostPort = '', database] = splitOnce(path, '/');
  if (!hostPort.split(',').every(isHost)) {
    return refuse(
      'must name a host, with an optional port from 1 to 65535, after the @ (several hosts separated by commas)',
    );
  }
  if (!database || database.includes('/') || !decodes(database)) {
    return refuse(`must name a database after the host, as ${FORM}`);
  }
  return query === undefined || query === '' ? accept(null) : checkQuery(query);
}

function isHost(hostPort: string): boolean {
  const hasPort = hostPort.startsWith('[') ? hostPort.includes(']:') : hostPort.includes(':');
  return (hasPort ? parseHostPort(hostPort) : parseHost(hostPort)).ok;
}

/** The query parameters accepted (postgres.js sends others to the server at start-up). */
const PARAMETERS: Record<string, { values: readonly string[]; as: string }> = {
  sslmode: { values: SSL_MODES, as: 'an sslmode' },
  target_session_attrs: { values: SESSION_ATTRS, as: 'a target_session_attrs' },
};

function checkQuery(query: string): Parsed<null> {
  const seen = new Set<string>();
  for (const pair of query.split('&')) {
    const [name = '', value] = splitOnce(pair, '=');
    const allowed = PARAMETERS[name];
    if (!allowed || value === undefined || seen.has(name)) {
      return refuse(
        'may only carry ?sslmode=<mode> and &target_session_attrs=<attrs>, once each, after the database name',
      );
    }
    seen.add(name);
    if (!allowed.values.includes(value)) {
      const got = `${name} ${JSON.stringify(value)}`;
      return refuse(`must use ${allowed.as} of ${allowed.values.join(', ')} (got ${got})`);
    }
  }
  return accept(null);
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const index = text.indexOf(separator);
  return index === -1 ? [text, undefined] : [text.slice(0, index), text.slice(index + 1)];
}

function decodes(text: string): boolean {
  if (BAD_ESCAPE.test(text)) return false;
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * SVC_DATABASE_REPLICA_URLS: connection strings of read replicas, comma-separated (a comma
 * followed by `postgres://` starts the next one, so a URL's own host list stays whole).
 * Each is checked as SVC_DATABASE_URL is, without `target_session_attrs`: a replica is a
 * standby, which the service reads from as it is.
 */
export function parseReplicaUrls(text: string): Parsed<string[]> {
  const urls = text.split(/,(?=\s*postgres(?:ql)?:\/\/)/i).map((url) => url.trim());
  if (text.trim() === '') return accept([]);
  for (const [index, url] of urls.entries()) {
    const parsed = parseDatabaseUrl(url);
    if (!parsed.ok) return refuse(`URL ${index + 1} ${parsed.refusals[0]?.message ?? ''}`);
    if (/[?&]target_session_attrs=/.test(url)) {
      return refuse(
        `URL ${index + 1} must not carry target_session_attrs (replicas are read as they are)`,
      );
    }
  }
  return accept(urls);
}

/**
 * The database URL, for `serve`, which stops here when it is unset: it never falls back to
 * the embedded database `svc dev` makes (other commands use src/cli/database.ts).
 */
export function requireDatabaseUrl(config: Config): string {
  if (config.server.databaseUrl !== null) return config.server.databaseUrl;
  throw new Error(`SVC_DATABASE_URL is not set; set it to a connection string such as ${FORM}`);
}
