import { describe, expect, test } from '@jest/globals';
import { decodeCursor, encodeCursor } from '../../src/paging/cursor.js';

describe('cursors', () => {
  test.each([
    ['ascii', ['ada lovelace', '0b7c1f9e-4a52-4d8e-9a53-6f0c2b4d1e7a']],
    ['accents, CJK and an emoji', ['zoë 山田 🦊', 'id']],
    ['a number', [42, 'id']],
    ['a key longer than the scratch buffer', ['ü'.repeat(3000), 'id']],
  ])('%s: a cursor reads back as the values it was made of', (_, values) => {
    const cursor = encodeCursor('contacts', values);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor('contacts', cursor, values.length)).toEqual(values);
  });

  test('the text stays base64url JSON of the field and values (cursors already issued still read)', () => {
    const values = ['zoë 山田 🦊', 'id'];
    const cursor = encodeCursor('tasks', values);
    expect(Buffer.from(cursor, 'base64url').toString('utf8')).toBe(
      JSON.stringify(['tasks', ...values]),
    );
    // A long cursor made between two short ones leaves them whole.
    const long = encodeCursor('tasks', ['x'.repeat(5000), 'id']);
    expect(encodeCursor('tasks', values)).toBe(cursor);
    expect(decodeCursor('tasks', long, 2)).toEqual(['x'.repeat(5000), 'id']);
  });
});
