import { pino, type Logger, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** Keys whose values never reach a log line, wherever they sit in a logged object. */
const secretPaths = [
  'password',
  'token',
  'secret',
  'authorization',
  'cookie',
  '*.password',
  '*.token',
  '*.secret',
  '*.authorization',
  '*.cookie',
  'headers.authorization',
  'headers.cookie',
];

/** Characters of any one text a log line keeps; the rest is counted, not written. */
export const LOG_TEXT_MAX = 1000;
const LOG_ITEMS_MAX = 20;
const LOG_DEPTH_MAX = 4;

function excerpt(text: string): string {
  if (text.length <= LOG_TEXT_MAX) return text;
  return `${text.slice(0, LOG_TEXT_MAX)}… (${text.length - LOG_TEXT_MAX} more characters)`;
}

/**
 * A bounded copy of what a line logs: texts cut to an excerpt, lists and objects to their
 * first items, nesting to a few levels. A request's input can reach a log line through an
 * error (a driver's error quotes the statement's parameters); this keeps the line small.
 */
export function bounded(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return excerpt(value);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= LOG_DEPTH_MAX) return Array.isArray(value) ? '[list]' : '[object]';
  if (Array.isArray(value)) {
    const items = value.slice(0, LOG_ITEMS_MAX).map((item) => bounded(item, depth + 1));
    if (value.length > LOG_ITEMS_MAX) items.push(`… (${value.length - LOG_ITEMS_MAX} more)`);
    return items;
  }
  const entries = Object.entries(value).slice(0, LOG_ITEMS_MAX);
  return Object.fromEntries(entries.map(([key, item]) => [key, bounded(item, depth + 1)]));
}

/** Drizzle's message ends with `params: …`, the statement's inputs: never logged. */
function withoutParams(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  const at = text.indexOf('\nparams: ');
  return at === -1 ? text : `${text.slice(0, at)}\nparams: [not logged]`;
}

/** pino's error serializer, without the statement's inputs, bounded. */
function errorSerializer(error: Error): unknown {
  const serialized = pino.stdSerializers.err(error) as unknown as Record<string, unknown>;
  const { params: _params, parameters: _parameters, ...rest } = serialized;
  rest.message = withoutParams(rest.message);
  rest.stack = withoutParams(rest.stack);
  return bounded(rest);
}

/**
 * One line per entry for a person at a terminal (`svc dev`): time, level, message and
 * the fields after it, coloured only on a terminal that takes colour. Written
 * synchronously, like pino's own stdout, so nothing is lost when the process exits.
 */
function prettyStdout(): DestinationStream {
  return pretty({
    colorize: process.stdout.isTTY && process.stdout.hasColors(),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
    sync: true,
  });
}

export interface LoggerOptions {
  level?: string;
  /** Where lines go; tests pass one to read what was logged. @default stdout */
  destination?: DestinationStream;
  /**
   * `json`: one JSON object per line (`svc serve`, for log collectors); `pretty`: lines
   * for a person (`svc dev`). Ignored when a destination is given. @default 'json'
   */
  format?: 'json' | 'pretty';
}

/**
 * Structured logs on stdout: JSON lines, or readable lines in `svc dev`. `level` follows
 * pino's names; tests pass a destination to read what was logged.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const destination =
    options.destination ?? (options.format === 'pretty' ? prettyStdout() : undefined);
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'svc' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: secretPaths, censor: '[redacted]' },
      serializers: { err: errorSerializer, yoga: bounded },
    },
    destination,
  );
}

/** A logger that drops everything, for commands and tests that want quiet. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
