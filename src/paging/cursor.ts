import { refuse } from '../errors.js';

/**
 * Opaque cursors: base64url JSON of the issuing field's name and the keyset values of the
 * last row. A cursor from another field, or text that is not one, is `cursor_malformed`.
 */
export function encodeCursor(field: string, values: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify([field, ...values])).toString('base64url');
}

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
