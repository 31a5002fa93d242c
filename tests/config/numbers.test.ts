import { describe, expect, test } from '@jest/globals';
import {
  parseByteSize,
  parseCount,
  parsePort,
  parseWholeNumber,
} from '../../src/config/numbers.js';

describe('parseCount', () => {
  test.each([
    ['1', 1],
    ['20', 20],
    ['007', 7],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('accepts %j as %j', (text, value) => {
    expect(parseCount(text)).toEqual({ ok: true, value });
  });

  test.each(['0', '', '+5', '-5', '5.0', '0x10', '1e3', ' 5', '5 ', 'five', '9007199254740992'])(
    'refuses %j as not a whole number above zero',
    (text) => {
      expect(parseCount(text)).toEqual({
        ok: false,
        refusals: [{ message: 'must be a whole number above zero' }],
      });
    },
  );
});

describe('parseByteSize', () => {
  test.each([
    ['1', 1],
    ['1048576', 1048576],
  ])('accepts the plain number %j', (text, value) => {
    expect(parseByteSize(text)).toEqual({ ok: true, value });
  });

  test.each(['0', '1MB', '1MiB', '1k', '1 048 576', '1_000', 'big', '-1'])(
    'refuses %j because a byte size is a plain number above zero',
    (text) => {
      const result = parseByteSize(text);
      expect(result.ok).toBe(false);
      expect(JSON.stringify(result)).toContain('without a unit');
    },
  );
});

describe('parseWholeNumber', () => {
  test.each([
    ['0', 0, 10, 0],
    ['10', 0, 10, 10],
    ['1250', 1, 1250, 1250],
  ])('accepts %j within %j to %j', (text, min, max, value) => {
    expect(parseWholeNumber(text, min, max)).toEqual({ ok: true, value });
  });

  test.each([
    ['0', 1, 1250],
    ['1251', 1, 1250],
    ['106752', 0, 106751],
    ['-1', 0, 10],
  ])('refuses %j outside %j to %j and names the range', (text, min, max) => {
    expect(parseWholeNumber(text, min, max)).toEqual({
      ok: false,
      refusals: [{ message: `must be a whole number from ${min} to ${max}` }],
    });
  });
});

describe('parsePort', () => {
  test.each([
    ['1', 1],
    ['587', 587],
    ['65535', 65535],
  ])('accepts port %j', (text, value) => {
    expect(parsePort(text)).toEqual({ ok: true, value });
  });

  test.each(['0', '65536', 'smtp', '25.0', ''])('refuses port %j', (text) => {
    expect(parsePort(text).ok).toBe(false);
  });
});
