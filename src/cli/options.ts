import type { ArgsDef } from 'citty';
import { isAppError } from '../errors.js';
import { CommandError, UsageError } from './errors.js';

/**
 * citty reads options leniently: an unknown one is ignored, one given twice keeps the
 * last value, and a missing value swallows the next option. Commands check their own
 * arguments first (already normalised to `--name`), so each of these is a usage error
 * naming the option. `repeatable` options may appear more than once.
 */
export function checkOptions(
  rawArgs: readonly string[],
  args: ArgsDef,
  repeatable: readonly string[] = [],
): void {
  const seen = new Set<string>();
  for (let i = 0; i < rawArgs.length; i += 1) {
    const arg = rawArgs[i] as string;
    if (!arg.startsWith('--') || arg === '--') {
      throw new UsageError(`unexpected argument "${arg}"`);
    }
    const [name = '', inline] = splitOption(arg);
    const def = args[name];
    if (!def) throw new UsageError(`unknown option -${name}`);
    if (seen.has(name) && !repeatable.includes(name)) {
      throw new UsageError(`-${name} is given more than once`);
    }
    seen.add(name);
    if (def.type === 'boolean') {
      if (inline !== undefined && inline !== 'true' && inline !== 'false') {
        throw new UsageError(`-${name} takes no value (got "${inline}")`);
      }
      continue;
    }
    if (inline !== undefined) continue;
    const next = rawArgs[i + 1];
    if (next === undefined || (next.startsWith('--') && next.length > 2)) {
      throw new UsageError(`-${name} needs a value`);
    }
    i += 1;
  }
}

function splitOption(arg: string): [string, string | undefined] {
  const body = arg.slice(2);
  const eq = body.indexOf('=');
  return eq === -1 ? [body, undefined] : [body.slice(0, eq), body.slice(eq + 1)];
}

/**
 * Runs a service check for one option and turns its refusal into a failure naming the
 * option and the reason: `-email: email address does not parse (email_invalid)`.
 */
export function forOption<T>(option: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw refusalOf(option, error);
  }
}

/** The same for an async service call. */
export async function forOptionAsync<T>(option: string, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (error) {
    throw refusalOf(option, error);
  }
}

function refusalOf(option: string, error: unknown): unknown {
  return isAppError(error)
    ? new CommandError(`${option}: ${error.message} (${error.reason})`)
    : error;
}

/** A whole number written plainly (no sign, unit, fraction or exponent). */
export function plainWholeNumber(text: string): number | null {
  return /^\d{1,15}$/.test(text) ? Number(text) : null;
}

/** Aligned columns under a header, one row a line; cells are written as given. */
export function formatTable(headers: readonly string[], rows: readonly string[][]): string {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        column === cells.length - 1 ? cell : cell.padEnd(widths[column] as number),
      )
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** RFC 3339 in UTC, to the second; `none` for no date. */
export function when(date: Date | null, none = '-'): string {
  return date ? date.toISOString().replace(/\.\d{3}Z$/, 'Z') : none;
}
