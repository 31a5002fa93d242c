import * as v from 'valibot';
import { parseCidrList } from './cidr.js';
import { parseCorsOrigins } from './cors.js';
import { parseDatabaseUrl, parseReplicaUrls } from './database-url.js';
import { parseDirectory } from './directory.js';
import { MAX_TIMER_MS, parseDuration } from './duration.js';
import { parseHexKey } from './hex-key.js';
import { parseHost, parseHostPort } from './host-port.js';
import { parseLocale } from './locale.js';
import { parseByteSize, parseCount, parsePort, parseWholeNumber } from './numbers.js';
import { parsePageSizes } from './page-sizes.js';
import { refuse, type Parsed } from './parsed.js';
import type { SmtpTls } from './types.js';
import { parseBaseUrl, parsePublicUrl } from './urls.js';
import { parseWebhookAllowList } from './webhook-hosts.js';

/** A valibot schema from one variable's text to its value. */
export type Schema<T> = v.GenericSchema<string, T>;

/**
 * Wraps a pure parser as a valibot schema. Each refusal becomes an issue whose `input`
 * is the part of the value to quote (a list's entry, or the whole value).
 */
export function fromParser<T>(parse: (text: string) => Parsed<T>): Schema<T> {
  return v.pipe(
    v.string(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const result = parse(dataset.value);
      if (result.ok) return result.value;
      for (const refusal of result.refusals) {
        addIssue({ message: refusal.message, input: refusal.got ?? dataset.value });
      }
      return NEVER;
    }),
  );
}

// The valibot schema of every kind of variable, one place for the loader to pick from.

export const text: Schema<string> = v.string();
export const count = fromParser(parseCount);
export const byteSize = fromParser(parseByteSize);
export const port = fromParser(parsePort);
export const wholeNumber = (min: number, max: number): Schema<number> =>
  fromParser((t) => parseWholeNumber(t, min, max));

/** A duration kept as data (a link's life, a cooldown): any safe number of milliseconds. */
export const duration = fromParser((t) => parseDuration(t));
/**
 * A duration handed to a timer (deadlines, timeouts, graces): Node fires a longer
 * setTimeout after 1 ms, so such values stop at about 24.8 days.
 */
export const timerDuration = fromParser((t) => parseDuration(t, { maxMs: MAX_TIMER_MS }));
/** SVC_DATABASE_REPLICA_MAX_LAG: from 100 ms (a replica is checked twice a second) to an hour. */
export const replicaLag = fromParser((t) => parseDuration(t, { minMs: 100, maxMs: 3_600_000 }));
/** SVC_TENANT_MACHINE_GRACE: `0s` stops recording at once (SPEC 8.2). */
/**
 * How long housekeeping keeps rows (SVC_EVENTS_RETENTION): at least an hour, so a row is
 * never swept while the work that wrote it (a live stream, a delivery) may still read it.
 */
export const retentionDuration = fromParser((t) => parseDuration(t, { minMs: 3_600_000 }));
export const graceDuration = fromParser((t) => parseDuration(t, { allowZero: true }));

/** SVC_ADDR; `:8080` means every interface, as in Go (`host` is then ''). */
export const listenAddress = fromParser((t) => parseHostPort(t, { allowEmptyHost: true }));
export const cidrList = fromParser(parseCidrList);
export const corsOrigins = fromParser(parseCorsOrigins);
export const webhookAllowList = fromParser(parseWebhookAllowList);
export const databaseUrl = fromParser(parseDatabaseUrl);
export const replicaUrls = fromParser(parseReplicaUrls);
export const locale = fromParser(parseLocale);
export const pageSizes = fromParser(parsePageSizes);
export const publicUrl = fromParser(parsePublicUrl);
export const baseUrl = fromParser(parseBaseUrl);
export const hexKey = fromParser((t) => parseHexKey(t));
export const directory = fromParser(parseDirectory);

/** A relay host; `host:587` gets a hint, since the port has its own variable. */
export const smtpHost = fromParser((t) => {
  const host = parseHost(t);
  if (host.ok || !parseHostPort(t).ok) return host;
  return refuse('must be a host name without a port; set the port in SVC_SMTP_PORT');
});

export const smtpTls: Schema<SmtpTls> = v.picklist(
  ['mandatory', 'opportunistic', 'none'],
  'must be mandatory, opportunistic or none',
);

/** A plain sender address; a display name (`CRM <crm@example.com>`) is not accepted. */
export const email: Schema<string> = v.pipe(
  v.string(),
  v.email('must be an email address such as crm@example.com'),
);

/** SVC_LOG_LEVEL: pino's level names, quietest last. */
export const logLevel: Schema<'trace' | 'debug' | 'info' | 'warn' | 'error'> = v.picklist(
  ['trace', 'debug', 'info', 'warn', 'error'],
  'must be trace, debug, info, warn or error',
);
