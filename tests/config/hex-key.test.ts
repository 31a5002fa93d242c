import { describe, expect, test } from '@jest/globals';
import { parseHexKey } from '../../src/config/hex-key.js';

const KEY = '00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF';

describe('parseHexKey', () => {
  test('reads 64 hex characters in either case as 32 bytes', () => {
    const result = parseHexKey(KEY);
    expect(result.ok && result.value).toEqual(Buffer.from(KEY, 'hex'));
    expect(result.ok && result.value.length).toBe(32);
  });

  test.each([
    [KEY.slice(0, 62), 'not 62'],
    [`${KEY}00`, 'not 66'],
    ['', 'not 0'],
  ])('refuses a key of the wrong size and says how long it is', (text, says) => {
    expect(JSON.stringify(parseHexKey(text))).toContain(says);
  });

  test.each([`${KEY.slice(0, 63)}g`, `${KEY.slice(0, 62)} 0`, `0x${KEY.slice(2)}`])(
    'refuses a key with a character that is not hex',
    (text) => {
      expect(parseHexKey(text)).toEqual({
        ok: false,
        refusals: [{ message: 'must be 64 hex characters (0-9, a-f)' }],
      });
    },
  );
});
