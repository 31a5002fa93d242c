// The kinds a custom field may have, and how each judges a value (docs/fields.md). A value
// arrives as JSON and is stored as JSON in one canonical form, so equal values compare
// equal in SQL (contactPage's field condition) and read back the same.
import * as v from 'valibot';
import type { SubField } from './tables.js';

export const KINDS = [
  'text',
  'long_text',
  'number',
  'boolean',
  'date',
  'date_time',
  'select',
  'multi_select',
  'url',
  'email',
  'phone',
  'currency',
  'repeater',
] as const;
export type Kind = (typeof KINDS)[number];

export function isKind(kind: string): kind is Kind {
  return (KINDS as readonly string[]).includes(kind);
}

/** Caps a value is held to, per kind (characters, digits, items). */
export const VALUE_LIMITS = {
  text: 1_000,
  longText: 10_000,
  url: 2_048,
  email: 254,
  /** Digits of a phone number (E.164 allows 15; extensions go beyond). */
  phoneDigits: { min: 3, max: 20 },
  /** Digits of a number before and after the point. */
  integerDigits: 20,
  fractionDigits: 10,
} as const;

/** What judging a value needs to know of its field (a definition or a sub field). */
export interface KindSpec {
  kind: Kind;
  options?: readonly string[];
  currency?: string;
}

/** The value as stored; `null` for a blank one (writing it clears the field). */
export type Judged = { ok: true; value: unknown } | { ok: false };

const ok = (value: unknown): Judged => ({ ok: true, value });
const mismatch: Judged = { ok: false };

const emailSchema = v.pipe(v.string(), v.maxLength(VALUE_LIMITS.email), v.email());
const decimalPattern = /^([+-]?)(\d+)(?:\.(\d+))?$/;

/**
 * Judges `raw` against a kind: the canonical stored form, `null` when it is blank (null,
 * an empty or all-space string, an empty list), or a mismatch.
 */
export function judgeValue(spec: KindSpec, raw: unknown): Judged {
  if (raw === null || raw === undefined) return ok(null);
  if (typeof raw === 'string' && raw.trim() === '' && spec.kind !== 'boolean') return ok(null);
  switch (spec.kind) {
    case 'text':
      return judgeText(raw, VALUE_LIMITS.text, false);
    case 'long_text':
      return judgeText(raw, VALUE_LIMITS.longText, true);
    case 'number': {
      const number = decimal(raw, VALUE_LIMITS.fractionDigits);
      return number === null ? mismatch : ok(number);
    }
    case 'boolean':
      return typeof raw === 'boolean' ? ok(raw) : mismatch;
    case 'date':
      return typeof raw === 'string' && isDate(raw.trim()) ? ok(raw.trim()) : mismatch;
    case 'date_time': {
      const at = typeof raw === 'string' ? dateTime(raw.trim()) : null;
      return at ? ok(at) : mismatch;
    }
    case 'select': {
      const option = typeof raw === 'string' ? optionOf(raw, spec.options ?? []) : undefined;
      return option !== undefined ? ok(option) : mismatch;
    }
    case 'multi_select':
      return judgeOptions(raw, spec.options ?? []);
    case 'url':
      return judgeUrl(raw);
    case 'email': {
      const email = typeof raw === 'string' ? raw.trim() : null;
      return email !== null && v.is(emailSchema, email) ? ok(email) : mismatch;
    }
    case 'phone':
      return judgePhone(raw);
    case 'currency':
      return judgeCurrency(raw, spec.currency ?? '');
    case 'repeater':
      return mismatch;
  }
}

function judgeText(raw: unknown, max: number, lines: boolean): Judged {
  if (typeof raw !== 'string') return mismatch;
  const text = raw.trim();
  // Characters counted only when the UTF-16 length could pass the cap (no array a value).
  if (text.length > max && [...text].length > max) return mismatch;
  // A single-line text keeps no line break (a long text does).
  if (!lines && /[\r\n]/.test(text)) return mismatch;
  return ok(text);
}

/**
 * A decimal as a canonical string (`"-12.5"`: no `+`, no leading zeros, no trailing
 * fractional zeros), from a JSON number or a decimal string; null when it is neither or
 * holds more digits than the caps. Strings keep every digit, where a JSON number is
 * already a binary float.
 */
export function decimal(raw: unknown, fractionDigits: number): string | null {
  let text: string;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) return null;
    text = String(raw);
  } else if (typeof raw === 'string') {
    text = raw.trim();
  } else {
    return null;
  }
  const match = decimalPattern.exec(text);
  if (!match) return null;
  const [, sign, whole = '', fraction = ''] = match;
  const integer = whole.replace(/^0+(?=\d)/, '');
  const decimals = fraction.replace(/0+$/, '');
  if (integer.length > VALUE_LIMITS.integerDigits || decimals.length > fractionDigits) return null;
  const zero = integer === '0' && decimals === '';
  return `${sign === '-' && !zero ? '-' : ''}${integer}${decimals ? `.${decimals}` : ''}`;
}

/** A calendar date written `YYYY-MM-DD` that exists (no 31 February). */
export function isDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const at = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(at.getTime()) && at.toISOString().startsWith(text);
}

/** An ISO 8601 date and time with its offset (`Z` or `+02:00`), as UTC to the millisecond. */
function dateTime(text: string): string | null {
  const match = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.exec(
    text,
  );
  if (!match || !isDate(match[1]!)) return null;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? null : at.toISOString();
}

/**
 * The defined option `raw` names: the same text once both are composed (NFC), so a value
 * typed decomposed still matches. Stored as the definition spells it.
 */
function optionOf(raw: string, options: readonly string[]): string | undefined {
  const wanted = raw.trim().normalize('NFC');
  return options.find((option) => option.normalize('NFC') === wanted);
}

/** A list of distinct options, stored in the definition's order; empty is blank. */
function judgeOptions(raw: unknown, options: readonly string[]): Judged {
  if (!Array.isArray(raw)) return mismatch;
  const chosen = new Set<string>();
  for (const item of raw) {
    const option = typeof item === 'string' ? optionOf(item, options) : undefined;
    if (option === undefined) return mismatch;
    chosen.add(option);
  }
  return chosen.size === 0 ? ok(null) : ok(options.filter((option) => chosen.has(option)));
}

function judgeUrl(raw: unknown): Judged {
  if (typeof raw !== 'string') return mismatch;
  const text = raw.trim();
  if (text.length > VALUE_LIMITS.url || !URL.canParse(text)) return mismatch;
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return mismatch;
  return url.href.length > VALUE_LIMITS.url ? mismatch : ok(url.href);
}

/** A number as written (trimmed), made of digits, spaces, dots, dashes and parentheses. */
function judgePhone(raw: unknown): Judged {
  if (typeof raw !== 'string') return mismatch;
  const text = raw.trim();
  if (!/^\+?[\d\s().-]+$/.test(text)) return mismatch;
  const digits = text.replace(/\D/g, '').length;
  const { min, max } = VALUE_LIMITS.phoneDigits;
  return digits >= min && digits <= max ? ok(text) : mismatch;
}

/**
 * An amount in the field's currency: a decimal with at most the currency's minor digits,
 * or `{ amount, currency }` naming that same currency. Stored as
 * `{ amount: "12.50", currency: "EUR" }`, the amount padded to the minor digits.
 */
function judgeCurrency(raw: unknown, currency: string): Judged {
  let amount = raw;
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    const given = raw as Record<string, unknown>;
    const keys = Object.keys(given);
    if (keys.some((key) => key !== 'amount' && key !== 'currency')) return mismatch;
    if (given.currency !== undefined && given.currency !== currency) return mismatch;
    amount = given.amount;
    if (amount === null || amount === undefined) return ok(null);
  }
  const digits = minorDigits(currency);
  const canonical = digits === null ? null : decimal(amount, digits);
  if (canonical === null || digits === null) return mismatch;
  const [whole, fraction = ''] = canonical.split('.');
  const padded = digits > 0 ? `${whole}.${fraction.padEnd(digits, '0')}` : whole!;
  return ok({ amount: padded, currency });
}

/** ISO 4217 codes this runtime knows (Intl's list). */
const currencies = new Set(Intl.supportedValuesOf('currency'));

/** Whether `code` is an ISO 4217 currency code (`EUR`, upper case). */
export function isCurrency(code: string): boolean {
  return currencies.has(code);
}

/** A currency's minor digits (2 for EUR, 0 for JPY, 3 for KWD); null for an unknown code. */
function minorDigits(currency: string): number | null {
  if (!isCurrency(currency)) return null;
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions()
    .maximumFractionDigits!;
}

/** The kind spec of a sub field. */
export function subFieldSpec(subField: SubField): KindSpec {
  return {
    kind: subField.kind as Kind,
    ...(subField.options ? { options: subField.options } : {}),
    ...(subField.currency ? { currency: subField.currency } : {}),
  };
}
