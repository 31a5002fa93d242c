// The vocabulary every value parser in this folder speaks. A parser knows only the text,
// not the variable, so it answers a rule the text breaks (`must be ...`); the reader
// (./reader.ts) turns each into a problem naming the variable.

/**
 * The outcome of parsing one configuration value. Helpers return refusals instead of
 * throwing so the loader can report every problem at once (SPEC 8.2: `svc check` names
 * each refused value).
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; refusals: Refusal[] };

export interface Refusal {
  /** Completes a sentence that starts with the variable name: `must be ...`. */
  message: string;
  /**
   * The part of the value to quote, when it is not the whole value (one entry of a
   * list). The loader never quotes a secret, whatever this says.
   */
  got?: string;
}

export function accept<T>(value: T): Parsed<T> {
  return { ok: true, value };
}

export function refuse<T = never>(message: string, got?: string): Parsed<T> {
  return { ok: false, refusals: [got === undefined ? { message } : { message, got }] };
}

export function mapParsed<A, B>(parsed: Parsed<A>, map: (value: A) => B): Parsed<B> {
  return parsed.ok ? accept(map(parsed.value)) : parsed;
}

/**
 * Parses a comma-separated value entry by entry, collecting each refused entry (quoted as
 * itself) instead of stopping. Spaces around commas are tolerated and empty entries (a
 * trailing comma, `a,,b`) are skipped: their meaning is clear and refusing them would
 * only stop a service over punctuation.
 */
export function parseList<T>(text: string, parseEntry: (entry: string) => Parsed<T>): Parsed<T[]> {
  const values: T[] = [];
  const refusals: Refusal[] = [];
  for (const entry of splitList(text)) {
    const result = parseEntry(entry);
    if (result.ok) values.push(result.value);
    else refusals.push(...result.refusals.map((r) => ({ got: entry, ...r })));
  }
  return refusals.length === 0 ? accept(values) : { ok: false, refusals };
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
