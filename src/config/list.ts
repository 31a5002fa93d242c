import type { Parsed, Refusal } from './parsed.js';

/**
 * Splits a comma-separated value. Spaces around commas are tolerated and empty entries
 * (a trailing comma, `a,,b`) are skipped: their meaning is clear and refusing them
 * would only stop a service over punctuation.
 */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** Parses every entry, collecting each refused one (quoted as itself) instead of stopping. */
export function parseEach<T>(entries: string[], parse: (entry: string) => Parsed<T>): Parsed<T[]> {
  const values: T[] = [];
  const refusals: Refusal[] = [];
  for (const entry of entries) {
    const result = parse(entry);
    if (result.ok) values.push(result.value);
    else refusals.push(...result.refusals.map((r) => ({ got: entry, ...r })));
  }
  return refusals.length === 0 ? { ok: true, value: values } : { ok: false, refusals };
}
