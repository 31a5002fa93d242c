import { GraphQLError } from 'graphql';
import type { YogaLogger } from 'graphql-yoga';
import type { Logger } from '../log.js';

/**
 * The level a line Yoga logs at `error` deserves. Yoga logs every error of an answer
 * there, refusals included; `error` is kept for the service's own failures:
 *
 * - a refusal (a wrong password, a validation error, a 405 for a GET mutation: a
 *   GraphQLError whose transport status, if any, is under 500 and whose code is not
 *   INTERNAL) is the client's mistake: `silent` here, since the operation observer
 *   (src/graph/observe.ts) logs it as one line at `debug` with its operation and caller;
 * - an INTERNAL the masker made was logged by it already, with its correlation id and
 *   the real error: `debug`;
 * - anything else is a failure: `error`.
 */
export function yogaErrorLevel(args: readonly unknown[]): 'error' | 'silent' | 'debug' {
  if (args.length === 0 || !args.every((arg) => arg instanceof GraphQLError)) return 'error';
  const errors = args as readonly GraphQLError[];
  if (errors.every((error) => error.extensions.code === 'INTERNAL')) return 'debug';
  const refused = errors.every((error) => {
    const http = error.extensions.http as { status?: number } | undefined;
    return error.extensions.code !== 'INTERNAL' && (http?.status ?? 400) < 500;
  });
  return refused ? 'silent' : 'error';
}

/**
 * Yoga's logger onto pino. Each error object is logged once: Yoga logs a request's
 * error both where it is raised and where the answer is made (a GET mutation's 405 gave
 * two identical lines), so one already logged is skipped. Yoga's own progress notes
 * ("Processing GraphQL Parameters", twice per operation) go to `trace`.
 */
export function yogaLogger(log: Logger): YogaLogger {
  const logged = new WeakSet<object>();
  return {
    debug: (...args) => log.trace({ yoga: args }, 'yoga'),
    info: (...args) => log.info({ yoga: args }, 'yoga'),
    warn: (...args) => log.warn({ yoga: args }, 'yoga'),
    error: (...args) => {
      const objects = args.filter((arg): arg is object => typeof arg === 'object' && arg !== null);
      if (objects.length > 0 && objects.every((arg) => logged.has(arg))) return;
      for (const arg of objects) logged.add(arg);
      const level = yogaErrorLevel(args);
      if (level !== 'silent') log[level]({ yoga: args }, 'yoga');
    },
  };
}
