import * as v from 'valibot';
import { PASSWORD_MAX, PASSWORD_MIN } from '../auth/passwords.js';
import { refuse } from '../errors.js';

/** RFC 5321's limit on a forward path leaves 254 characters for an address. */
export const EMAIL_MAX = 254;
export const NAME_MAX = 200;

const emailSchema = v.pipe(v.string(), v.maxLength(EMAIL_MAX), v.email());

/** Trims and checks an address; the stored form keeps the letter case as written. */
export function parseEmail(input: string): string {
  const email = input.trim();
  if (!v.is(emailSchema, email)) throw refuse('email_invalid');
  return email;
}

export function parseName(input: string): string {
  const name = input.trim();
  if (!name) throw refuse('name_required');
  if ([...name].length > NAME_MAX) throw refuse('name_too_long', { max: NAME_MAX });
  return name;
}

/** Counted in characters (code points), never trimmed: spaces are part of a password. */
export function checkPassword(password: string): string {
  const length = [...password].length;
  if (length < PASSWORD_MIN) throw refuse('password_too_short', { min: PASSWORD_MIN });
  if (length > PASSWORD_MAX) throw refuse('password_too_long', { max: PASSWORD_MAX });
  return password;
}
