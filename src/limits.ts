import { refuse } from './errors.js';

/**
 * Caps on what a person writes, in characters (code points): far above anything a person
 * types, low enough that no stored text reaches an index's row limit or a log line's
 * comfort. The README's "Limits" table lists them; docs/limits.md explains the mechanism.
 */
export const TEXT_MAX = {
  /** Contact, account, workspace and token names (SPEC 2.2 caps account names). */
  name: 200,
  /** Task titles. */
  title: 500,
  /** An identity's identifier: an address, a number, a handle. */
  identifier: 320,
  /** An identity's display name. */
  displayName: 200,
  /** A channel, priority, status, role or other word the service knows by name. */
  word: 64,
  /** A task's originSource and originEventId. */
  origin: 200,
  /** A search (`q`). */
  search: 200,
  /** A webhook's address. */
  url: 2048,
  /** An opaque cursor a field issued (names inside it may be long in UTF-8). */
  cursor: 4096,
} as const;

/** The cap of a text input that declares none (a plugin's, say). */
export const DEFAULT_TEXT_MAX = 4096;
/** The cap of a list input that declares none. */
export const DEFAULT_LIST_MAX = 100;
/** Identities one createContact writes at once. */
export const IDENTITIES_PER_REQUEST = 20;
/** Identities one contact holds (identities_full beyond). */
export const IDENTITIES_PER_CONTACT = 50;
/** How deep an operation nests: selections, fragment spreads, list and object values. */
export const DEPTH_MAX = 64;
/**
 * Tokens in one operation. GraphiQL's whole introspection query has 183 and a frontend's
 * page a few hundred; parsing and validating 40,000 takes about a quarter of a second of
 * the event loop, where a megabyte of aliases took a second.
 */
export const TOKENS_MAX = 40_000;

/** Text PostgreSQL can store as written: no NUL, no unpaired UTF-16 surrogate. */
export function isValidText(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/** Whether `text` holds more than `max` code points, without counting long texts whole. */
export function longerThan(text: string, max: number): boolean {
  if (text.length <= max) return false; // code points never outnumber UTF-16 units
  if (text.length > max * 2) return true; // nor fall below half of them
  let count = 0;
  for (const _ of text) if (++count > max) return true;
  return false;
}

/**
 * The domain's check of a text it stores: valid, and at most `max` characters. `field`
 * names the input in the message; the reason and meta are the same wherever the text
 * came from (the graph checks its arguments the same way before anything runs).
 */
export function checkText(text: string, field: string, max: number): string {
  if (!isValidText(text)) {
    throw refuse('text_invalid', {}, { message: `${field} is not valid text` });
  }
  if (longerThan(text, max)) {
    throw refuse(
      'text_too_long',
      { max },
      { message: `${field} may be at most ${max} characters` },
    );
  }
  return text;
}
