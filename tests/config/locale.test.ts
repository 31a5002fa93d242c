import { describe, expect, test } from '@jest/globals';
import { parseLocale } from '../../src/config/locale.js';

describe('parseLocale', () => {
  test.each([
    ['es-ES', 'es-ES'],
    ['en-GB', 'en-GB'],
    ['de-DE', 'de-DE'],
    ['en-gb', 'en-GB'],
    ['FR', 'fr'],
    ['pt-BR', 'pt-BR'],
    ['zh-Hant-TW', 'zh-Hant-TW'],
    ['es-ES-u-nu-latn', 'es-ES-u-nu-latn'],
    ['en-GB-x-house', 'en-GB-x-house'],
  ])('accepts %j in its canonical form %j', (text, canonical) => {
    expect(parseLocale(text)).toEqual({ ok: true, value: canonical });
  });

  test.each(['und', 'UND', 'und-ES', 'x-private', 'X-whatever', 'qaa', 'qtz-ES', 'QAB'])(
    'refuses %j, which names no language',
    (text) => {
      expect(parseLocale(text)).toEqual({
        ok: false,
        refusals: [{ message: 'must name a language; und and private-use tags are refused' }],
      });
    },
  );

  test.each(['english', 'spanish-ES'])(
    'refuses %j, whose language code is longer than three letters',
    (text) => {
      expect(parseLocale(text)).toEqual({
        ok: false,
        refusals: [
          { message: 'must start with a two- or three-letter language code such as en or es' },
        ],
      });
    },
  );

  test.each(['en_GB', 'en--GB', ' en-GB', 'e', '', 'en-GB,de', 'i-klingon'])(
    'refuses the malformed tag %j',
    (text) => {
      expect(parseLocale(text)).toEqual({
        ok: false,
        refusals: [{ message: 'must be a BCP 47 language tag such as en-GB or es-ES' }],
      });
    },
  );

  test('accepts qua, outside the private-use range', () => {
    expect(parseLocale('qu')).toEqual({ ok: true, value: 'qu' });
    expect(parseLocale('qua').ok).toBe(true);
  });
});
