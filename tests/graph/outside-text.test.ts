// The one rule for text from outside (src/limits.ts): the graph's arguments and a plugin's
// inbound data are judged alike, and a receiver learns why instead of catching a throw.
import { describe, expect, test } from '@jest/globals';
import { printable } from '../../src/errors.js';
import { DEPTH_MAX, textProblem, valueProblem } from '../../src/limits.js';

describe('textProblem', () => {
  test.each([
    ['plain text', 'hello', 10, null],
    ['a NUL', 'a\u0000b', 10, { reason: 'text_invalid' }],
    ['a lone surrogate', 'a\ud800', 10, { reason: 'text_invalid' }],
    ['a pair counted as one character', '😀'.repeat(10), 10, null],
    ['one character too many', 'x'.repeat(11), 10, { reason: 'text_too_long', max: 10 }],
  ])('%s', (_name, text, max, expected) => {
    expect(textProblem(text, max)).toEqual(expected);
  });
});

describe('valueProblem', () => {
  test('names where a nested string fails', () => {
    expect(valueProblem({ text: { body: 'a\u0000' } })).toEqual({
      reason: 'text_invalid',
      at: 'text.body',
    });
    expect(valueProblem({ contacts: [{ name: 'ok' }, { name: '\udc00' }] })).toEqual({
      reason: 'text_invalid',
      at: 'contacts[1].name',
    });
  });

  test('judges keys, and caps top-level keys by name', () => {
    expect(valueProblem({ text: { 'b\u0000': 'x' } })).toEqual({
      reason: 'text_invalid',
      at: 'text',
    });
    const caps = { maxLength: 50, maxLengths: { from: 5 } };
    expect(valueProblem({ from: '123456', body: '123456' }, caps)).toEqual({
      reason: 'text_too_long',
      max: 5,
      at: 'from',
    });
    expect(valueProblem({ nested: { from: '123456' } }, caps)).toBeNull();
  });

  test('refuses nesting past DEPTH_MAX, and passes numbers, booleans and null', () => {
    let deep: unknown = 'x';
    for (let i = 0; i <= DEPTH_MAX; i += 1) deep = [deep];
    expect(valueProblem(deep)).toMatchObject({ reason: 'value_too_deep', max: DEPTH_MAX });
    expect(valueProblem({ a: 1, b: true, c: null, d: [1.5] })).toBeNull();
  });
});

describe('printable', () => {
  test('escapes control characters and lone surrogates, and cuts to its cap', () => {
    expect(printable('a\u0000b\u0007c\ud800d')).toBe('a\\u0000b\\u0007c\\ud800d');
    expect(printable('x'.repeat(150))).toBe(`${'x'.repeat(100)}…`);
    expect(printable('é😀', 1)).toBe('é…');
  });
});
