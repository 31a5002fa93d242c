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
/** Contacts one mergeContacts folds into its target (docs/contacts.md). */
export const MERGE_SOURCES_MAX = 20;
/** Duplicates one `contactDuplicates` answers when `first` is left out. */
export const DUPLICATES_DEFAULT = 10;
/** The most duplicates one `contactDuplicates` answers (`first` above is refused). */
export const DUPLICATES_MAX = 20;
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

/** What is wrong with a text: the reason it is refused with, and that reason's meta. */
export type TextProblem = { reason: 'text_invalid' } | { reason: 'text_too_long'; max: number };

/**
 * The one rule for text from outside (a graph argument, a platform's payload, a file):
 * null when `text` is valid and at most `max` characters, else why not. It never throws,
 * so a receiver of outside data can record the reason and go on with the next item.
 */
export function textProblem(text: string, max: number): TextProblem | null {
  if (!isValidText(text)) return { reason: 'text_invalid' };
  if (longerThan(text, max)) return { reason: 'text_too_long', max };
  return null;
}

/** A structured value's problem, and where in it: `text.body`, `contacts[0].name`. */
export type ValueProblem = (TextProblem | { reason: 'value_too_deep'; max: number }) & {
  at: string;
};

/**
 * Judges a structured value from outside (parsed JSON a platform posted) as the graph
 * judges a JSON argument: every string and every key by `textProblem`, at most `maxLength`
 * characters unless `maxLengths` names a tighter (or looser) cap for a top-level key, and
 * nesting at most DEPTH_MAX deep. PostgreSQL's jsonb refuses a NUL or an unpaired surrogate
 * anywhere in a document, so a value that passes can be stored as jsonb.
 */
export function valueProblem(
  value: unknown,
  options: { maxLength?: number; maxLengths?: Readonly<Record<string, number>> } = {},
): ValueProblem | null {
  const max = options.maxLength ?? DEFAULT_TEXT_MAX;
  const walk = (item: unknown, at: string, cap: number, depth: number): ValueProblem | null => {
    if (typeof item === 'string') {
      const problem = textProblem(item, cap);
      return problem && { ...problem, at };
    }
    if (typeof item !== 'object' || item === null) return null;
    if (depth >= DEPTH_MAX) return { reason: 'value_too_deep', max: DEPTH_MAX, at };
    const entries = Array.isArray(item) ? item.entries() : Object.entries(item);
    for (const [key, inner] of entries) {
      const where = typeof key === 'number' ? `${at}[${key}]` : at ? `${at}.${key}` : key;
      if (typeof key === 'string') {
        const problem = textProblem(key, max);
        if (problem) return { ...problem, at: at || '(key)' };
      }
      const innerCap =
        depth === 0 && typeof key === 'string' ? options.maxLengths?.[key] : undefined;
      const problem = walk(inner, where, innerCap ?? cap, depth + 1);
      if (problem) return problem;
    }
    return null;
  };
  return walk(value, '', max, 0);
}

/**
 * The domain's check of a text it stores: valid, and at most `max` characters. `field`
 * names the input in the message; the reason and meta are the same wherever the text
 * came from (the graph checks its arguments with the same `textProblem`).
 */
export function checkText(text: string, field: string, max: number): string {
  const problem = textProblem(text, max);
  if (problem?.reason === 'text_invalid') {
    throw refuse('text_invalid', {}, { message: `${field} is not valid text` });
  }
  if (problem) {
    throw refuse(
      'text_too_long',
      { max: problem.max },
      { message: `${field} may be at most ${problem.max} characters` },
    );
  }
  return text;
}
