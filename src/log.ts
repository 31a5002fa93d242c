import { pino, type Logger, type DestinationStream } from 'pino';

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

/**
 * Structured logs: one JSON object per line on stdout. `level` follows pino's names;
 * tests pass a destination to read what was logged.
 */
export function createLogger(
  options: { level?: string; destination?: DestinationStream } = {},
): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'svc' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: secretPaths, censor: '[redacted]' },
    },
    options.destination,
  );
}

/** A logger that drops everything, for commands and tests that want quiet. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
