// A list cell's items (the SDK's splitListCell): the import reads every address cell through
// it, most holding one item, which take a path of their own.
import { describe, expect, test } from '@jest/globals';
import { listCell, splitListCell } from '../../../src/plugin-sdk/index.js';

describe('splitListCell', () => {
  test('a cell of one item is that item, trimmed; an empty or blank cell none', () => {
    expect(splitListCell('ada@example.com')).toEqual(['ada@example.com']);
    expect(splitListCell('  ada@example.com ')).toEqual(['ada@example.com']);
    expect(splitListCell('')).toEqual([]);
    expect(splitListCell('   ')).toEqual([]);
  });

  test('splits at unescaped semicolons, undoing escapes, dropping empty items', () => {
    expect(splitListCell('a; b ;; c')).toEqual(['a', 'b', 'c']);
    expect(splitListCell('a\\;b; c')).toEqual(['a;b', 'c']);
    expect(splitListCell('a\\\\b')).toEqual(['a\\b']);
    expect(splitListCell('a\\b')).toEqual(['a\\b']);
  });

  test('reads back what listCell writes', () => {
    const items = ['plain', 'semi;colon', 'back\\slash', 'both\\;'];
    expect(splitListCell(listCell(items))).toEqual(items);
  });
});
