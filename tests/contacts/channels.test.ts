// Channel catalogue and identifier keys: pure rules, no database.
import { describe, expect, test } from '@jest/globals';
import {
  findChannel,
  normaliseIdentity,
  phoneKey,
  registerChannel,
} from '../../src/contacts/channels.js';
import { AppError } from '../../src/errors.js';

function reasonOf(work: () => unknown): string | undefined {
  try {
    work();
  } catch (error) {
    return error instanceof AppError ? error.reason : 'not an AppError';
  }
  return undefined;
}

describe('identifier keys', () => {
  test('an email key is trimmed and lower-cased; the identifier keeps its case', () => {
    expect(normaliseIdentity({ channel: 'email', identifier: ' Ada@Example.COM ' })).toEqual({
      channel: 'email',
      identifier: 'Ada@Example.COM',
      identifierKey: 'ada@example.com',
      displayName: null,
    });
  });

  test.each([
    ['+1 (555) 010-2030', '+15550102030'],
    ['  +44 20 7946 0018 ', '+442079460018'],
    ['020 7946 0018', '02079460018'],
    ['0044-20-7946-0018', '00442079460018'],
  ])('a phone key of %j is %j', (written, key) => {
    expect(phoneKey(written)).toBe(key);
  });

  test('a plugin channel compares identifiers trimmed, as written', () => {
    registerChannel({ name: 'Test-Handle', writable: true });
    expect(findChannel('test-handle')?.key('  @Ada ')).toBe('@Ada');
    expect(normaliseIdentity({ channel: 'TEST-handle', identifier: '@Ada' }).channel).toBe(
      'test-handle',
    );
  });

  test('a channel cannot be declared twice', () => {
    expect(() => registerChannel({ name: 'email', writable: false })).toThrow(/already declared/);
  });
});

describe('refusals', () => {
  test.each([
    [{ channel: '', identifier: 'x' }, 'identity_channel_required'],
    [{ channel: 'email', identifier: ' ' }, 'identity_identifier_required'],
    [{ channel: 'phone', identifier: 'no digits' }, 'identity_identifier_malformed'],
    [{ channel: 'telex', identifier: '123' }, 'channel_unknown'],
  ])('%j is refused with %s', (input, reason) => {
    expect(reasonOf(() => normaliseIdentity(input))).toBe(reason);
  });

  test('a channel fed only by its platform is channel_not_writable', () => {
    registerChannel({ name: 'test-feed', writable: false });
    expect(reasonOf(() => normaliseIdentity({ channel: 'test-feed', identifier: 'x' }))).toBe(
      'channel_not_writable',
    );
  });

  test('an empty display name is none', () => {
    expect(
      normaliseIdentity({ channel: 'email', identifier: 'a@b.c', displayName: '  ' }).displayName,
    ).toBeNull();
  });
});
