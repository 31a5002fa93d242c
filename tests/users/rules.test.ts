import { describe, expect, test } from '@jest/globals';
import {
  checkPassword,
  EMAIL_MAX,
  NAME_MAX,
  parseEmail,
  parseName,
} from '../../src/users/rules.js';

function reasonOf(work: () => unknown): unknown {
  try {
    work();
    return null;
  } catch (error) {
    return {
      reason: (error as { reason?: string }).reason,
      meta: (error as { meta?: unknown }).meta,
    };
  }
}

/** An address of exactly `length` characters. */
function addressOf(length: number): string {
  const domain = `${'d'.repeat(60)}.${'e'.repeat(60)}.${'f'.repeat(60)}.com`;
  return `${'a'.repeat(length - domain.length - 1)}@${domain}`;
}

describe('account rules', () => {
  test('the longest valid address, 254 characters, is accepted and one more is refused', () => {
    expect(EMAIL_MAX).toBe(254);
    expect(parseEmail(addressOf(254))).toHaveLength(254);
    expect(reasonOf(() => parseEmail(addressOf(255)))).toEqual({
      reason: 'email_invalid',
      meta: {},
    });
  });

  test('an address is trimmed and keeps its letter case', () => {
    expect(parseEmail('  Ada.Lovelace@Example.com ')).toBe('Ada.Lovelace@Example.com');
  });

  test.each(['', 'plain', 'a@', '@b.example', 'a b@c.example'])(
    '%j does not parse as an address',
    (input) => {
      expect(reasonOf(() => parseEmail(input))).toEqual({ reason: 'email_invalid', meta: {} });
    },
  );

  test('a name is required and capped, counted in characters', () => {
    expect(reasonOf(() => parseName('   '))).toEqual({ reason: 'name_required', meta: {} });
    expect(parseName('é'.repeat(NAME_MAX))).toHaveLength(NAME_MAX);
    expect(reasonOf(() => parseName('n'.repeat(NAME_MAX + 1)))).toEqual({
      reason: 'name_too_long',
      meta: { max: NAME_MAX },
    });
  });

  test.each([
    ['11 characters', 'x'.repeat(11), { reason: 'password_too_short', meta: { min: 12 } }],
    ['12 characters', 'x'.repeat(12), null],
    ['1024 characters', 'x'.repeat(1024), null],
    ['1025 characters', 'x'.repeat(1025), { reason: 'password_too_long', meta: { max: 1024 } }],
    ['12 emoji (24 UTF-16 units)', '🔑'.repeat(12), null],
    ['11 emoji', '🔑'.repeat(11), { reason: 'password_too_short', meta: { min: 12 } }],
    ['spaces count and are kept', ' '.repeat(12), null],
  ])('a password of %s', (_what, password, refusal) => {
    expect(reasonOf(() => checkPassword(password))).toEqual(refusal);
  });
});
