import { refuse } from '../errors.js';

/**
 * Opaque cursors: base64url JSON of the issuing field's name and the keyset values of the
 * last row. A cursor from another field, or text that is not one, is `cursor_malformed`.
 */
export function encodeCursor(field: string, values: readonly (string | number)[]): string {
  const json = JSON.stringify([field, ...values]);
  // A page encodes a cursor per row: written through one scratch buffer (JavaScript runs
  // one call at a time), it allocates no Buffer of its own. UTF-8 takes at most 3 bytes
  // per UTF-16 unit, so a text that could overflow the scratch takes a buffer of its own.
  if (json.length * 3 > scratch.length) return Buffer.from(json).toString('base64url');
  return scratch.toString('base64url', 0, scratch.write(json));
}

const scratch = Buffer.allocUnsafe(4096);

export function decodeCursor(field: string, cursor: string, arity: number): (string | number)[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw refuse('cursor_malformed');
  }
  if (
    !Array.isArray(parsed) ||
    parsed[0] !== field ||
    parsed.length !== arity + 1 ||
    !parsed.slice(1).every((v) => typeof v === 'string' || typeof v === 'number')
  ) {
    throw refuse('cursor_malformed');
  }
  return parsed.slice(1) as (string | number)[];
}
