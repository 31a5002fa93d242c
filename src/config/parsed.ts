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
