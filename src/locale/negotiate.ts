/**
 * Accept-Language (RFC 9110 12.5.4) against the locales the interface is written in.
 * Written here rather than taken from `negotiator`: its matching sends `es` to `es-ES` but
 * not `es-MX`, and lets `*` pick a locale, where SPEC 5 wants the closest match.
 */

export interface LanguageRange {
  /** The range as sent, e.g. `es-MX`; `*` is never kept. */
  tag: string;
  /** Weight 0..1; ranges weighted 0 ("not acceptable") are never kept. */
  q: number;
}

const rangePattern = /^[a-z]{1,8}(-[a-z0-9]{1,8})*$/i;
const weightPattern = /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i;

/** One `range;q=…` entry, or null when it is malformed, `*` or weighted 0. */
function parseRange(entry: string): LanguageRange | null {
  const [range = '', ...params] = entry.split(';').map((part) => part.trim());
  if (!rangePattern.test(range)) return null;
  let q = 1;
  for (const param of params) {
    if (!/^q=/i.test(param)) continue; // other parameters carry no meaning for us
    if (!weightPattern.test(param)) return null;
    q = Number(param.slice(2));
  }
  return q > 0 ? { tag: range, q } : null;
}

/** The ranges of an Accept-Language header, most wanted first (ties keep header order). */
export function parseAcceptLanguage(header: string | null | undefined): LanguageRange[] {
  if (!header) return [];
  const ranges = header
    .split(',')
    .map(parseRange)
    .filter((range): range is LanguageRange => range !== null);
  // Array.prototype.sort is stable, so equal weights keep the order they were sent in.
  return ranges.sort((a, b) => b.q - a.q);
}

function languageOf(tag: string): string {
  return (tag.split('-')[0] ?? '').toLowerCase();
}

/**
 * The supported locale closest to what the header asks for, or null. Ranges are tried
 * most wanted first; for each, the same tag (any letter case), then the first supported
 * locale of the same language (`es-MX` and `es` both reach `es-ES`). A more wanted
 * language wins over an exact match of a less wanted one.
 */
export function matchLocale(
  header: string | null | undefined,
  supported: readonly string[],
): string | null {
  for (const { tag } of parseAcceptLanguage(header)) {
    const exact = supported.find((locale) => locale.toLowerCase() === tag.toLowerCase());
    if (exact) return exact;
    const language = languageOf(tag);
    const sameLanguage = supported.find((locale) => languageOf(locale) === language);
    if (sameLanguage) return sameLanguage;
  }
  return null;
}
