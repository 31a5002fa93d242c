import { describe, expect, test } from '@jest/globals';
import { matchLocale, parseAcceptLanguage } from '../../src/locale/negotiate.js';

const supported = ['en-US', 'es-ES', 'de-DE', 'fr-FR'];

describe('parseAcceptLanguage', () => {
  test('orders ranges by weight and keeps header order between equal weights', () => {
    expect(parseAcceptLanguage('fr;q=0.5, de-DE, es;q=0.9, en;q=0.5')).toEqual([
      { tag: 'de-DE', q: 1 },
      { tag: 'es', q: 0.9 },
      { tag: 'fr', q: 0.5 },
      { tag: 'en', q: 0.5 },
    ]);
  });

  test('drops the wildcard, ranges weighted zero and malformed entries', () => {
    expect(
      parseAcceptLanguage('*, de;q=0, en_US, fr;q=2, es;q=abc, , it;q=0.800, pt;level=1'),
    ).toEqual([
      { tag: 'pt', q: 1 },
      { tag: 'it', q: 0.8 },
    ]);
  });

  test('answers nothing for a missing or empty header', () => {
    expect(parseAcceptLanguage(null)).toEqual([]);
    expect(parseAcceptLanguage('')).toEqual([]);
  });
});

describe('matchLocale', () => {
  test('an exact tag matches whatever its letter case', () => {
    expect(matchLocale('DE-de', supported)).toBe('de-DE');
  });

  test('a bare language or another region of it reaches the supported locale of that language', () => {
    expect(matchLocale('es', supported)).toBe('es-ES');
    expect(matchLocale('es-MX', supported)).toBe('es-ES');
    expect(matchLocale('fr-CA', supported)).toBe('fr-FR');
  });

  test('the most wanted language wins over an exact match of a less wanted one', () => {
    expect(matchLocale('es-MX, de-DE;q=0.9', supported)).toBe('es-ES');
  });

  test('unsupported ranges are skipped for the next one the header names', () => {
    expect(matchLocale('ja, zh-CN;q=0.9, fr;q=0.1', supported)).toBe('fr-FR');
  });

  test('a header naming nothing supported answers null, and so does a lone wildcard', () => {
    expect(matchLocale('ja, pt-BR', supported)).toBeNull();
    expect(matchLocale('*', supported)).toBeNull();
    expect(matchLocale(undefined, supported)).toBeNull();
  });

  test('of two supported locales of one language the first listed is chosen', () => {
    expect(matchLocale('pt', ['en-US', 'pt-BR', 'pt-PT'])).toBe('pt-BR');
    expect(matchLocale('pt-PT', ['en-US', 'pt-BR', 'pt-PT'])).toBe('pt-PT');
  });
});
