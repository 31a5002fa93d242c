import { describe, expect, test } from '@jest/globals';
import { parsePageSizes } from '../../src/config/page-sizes.js';

describe('parsePageSizes', () => {
  test.each([
    ['10,20,50,100', [10, 20, 50, 100]],
    ['10, 20 ,50', [10, 20, 50]],
    ['25', [25]],
    ['5,10,', [5, 10]],
  ])('reads %j as %j', (text, sizes) => {
    expect(parsePageSizes(text)).toEqual({ ok: true, value: sizes });
  });

  test.each([
    ['10,20,20,50', 'must list each page size once, but lists 20 twice'],
    ['50,20,10', 'must list page sizes in ascending order'],
    ['10,50,20', 'must list page sizes in ascending order'],
    [',', 'must list at least one page size'],
    ['10,0,20', 'must be a whole number above zero'],
    ['10,twenty', 'must be a whole number above zero'],
    ['10;20', 'must be a whole number above zero'],
    ['10,2.5', 'must be a whole number above zero'],
  ])('refuses %j', (text, message) => {
    expect(JSON.stringify(parsePageSizes(text))).toContain(message);
  });
});
