import { accept, refuse, type Parsed } from './parsed.js';

// Plain digits only: `+5`, `5.0`, `0x10`, `1e3` and surrounding spaces all parse as
// numbers in JavaScript, so Number() alone would let them through.
const DIGITS = /^[0-9]+$/;

/** A whole number from `min` to `max`, written as plain digits (leading zeros allowed). */
export function parseWholeNumber(text: string, min: number, max: number): Parsed<number> {
  const value = DIGITS.test(text) ? Number(text) : NaN;
  if (Number.isSafeInteger(value) && value >= min && value <= max) return accept(value);
  return refuse(`must be a whole number from ${min} to ${max}`);
}

/** SPEC 8.2: "A count is a whole number above zero." */
export function parseCount(text: string): Parsed<number> {
  const value = DIGITS.test(text) ? Number(text) : NaN;
  if (Number.isSafeInteger(value) && value > 0) return accept(value);
  return refuse('must be a whole number above zero');
}

/** SPEC 8.2: "A byte size is a plain number with no unit" (so `1MB`, `1MiB`, `1k` are refused). */
export function parseByteSize(text: string): Parsed<number> {
  const value = DIGITS.test(text) ? Number(text) : NaN;
  if (Number.isSafeInteger(value) && value > 0) return accept(value);
  return refuse('must be a number of bytes above zero, written without a unit');
}

export function parsePort(text: string): Parsed<number> {
  return parseWholeNumber(text, 1, 65535);
}
