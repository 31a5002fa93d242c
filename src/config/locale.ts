import { accept, refuse, type Parsed } from './parsed.js';

// BCP 47 reserves qaa..qtz for private use; such a code names no language we can format.
const PRIVATE_LANGUAGE = /^q[a-t][a-z]$/;

/**
 * A BCP 47 tag naming a language (`en-GB`, `de-DE`), returned in canonical form
 * (`en-gb` -> `en-GB`). `und` and private-use tags (`x-...`, `qaa`) are refused
 * (SPEC 8.2). Private-use subtags after a real language (`en-GB-x-foo`) are kept: the
 * tag still names a language.
 */
export function parseLocale(text: string): Parsed<string> {
  // V8 throws on a tag that is private use as a whole; test first to say why it is refused.
  const canonical = /^x-/i.test(text) ? 'x' : canonicalize(text);
  if (canonical === null) return refuse('must be a BCP 47 language tag such as en-GB or es-ES');
  const language = canonical.split('-')[0] ?? '';
  if (language === 'und' || language === 'x' || PRIVATE_LANGUAGE.test(language)) {
    return refuse('must name a language; und and private-use tags are refused');
  }
  // The syntax also allows 5 to 8 letters, but no such language code is registered:
  // `english` or `spanish` is a mistake, not a language.
  if (!/^[a-z]{2,3}$/.test(language)) {
    return refuse('must start with a two- or three-letter language code such as en or es');
  }
  return accept(canonical);
}

function canonicalize(text: string): string | null {
  try {
    // Throws a RangeError on a malformed tag; returns one entry for one tag.
    return Intl.getCanonicalLocales(text)[0] ?? null;
  } catch {
    return null;
  }
}
