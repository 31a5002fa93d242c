import { describe, expect, test } from '@jest/globals';
import { MAX_TIMER_MS, parseDuration } from '../../src/config/duration.js';

describe('parseDuration', () => {
  test.each([
    ['1500ms', 1500],
    ['30s', 30_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['168h', 604_800_000],
    ['1ms', 1],
    ['05s', 5000],
  ])('reads %j as %j milliseconds', (text, ms) => {
    expect(parseDuration(text)).toEqual({ ok: true, value: ms });
  });

  test.each([
    ['0s', 'zero'],
    ['0ms', 'zero'],
    ['1.5s', 'a decimal'],
    ['-1s', 'a negative number'],
    ['+1s', 'a sign'],
    ['30', 'a missing unit'],
    ['1d', 'a unit other than ms, s, m, h'],
    ['1us', 'a unit other than ms, s, m, h'],
    ['30S', 'an upper-case unit'],
    ['30 s', 'a space inside'],
    [' 30s', 'a leading space'],
    ['30s ', 'a trailing space'],
    ['1h30m', 'a compound duration'],
    ['thirty seconds', 'words'],
    ['s', 'a unit with no number'],
    ['', 'nothing'],
    ['99999999999999999h', 'a value past the largest safe integer'],
  ])('refuses %j (%s)', (text) => {
    const result = parseDuration(text);
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).toContain('must be a duration above zero');
  });

  test.each(['0s', '0ms', '0m', '0h'])('accepts %j as zero when zero is allowed', (text) => {
    expect(parseDuration(text, { allowZero: true })).toEqual({ ok: true, value: 0 });
  });

  test('still refuses a negative duration when zero is allowed', () => {
    expect(parseDuration('-1s', { allowZero: true }).ok).toBe(false);
  });

  test('accepts the largest timer delay and refuses one millisecond more', () => {
    const options = { maxMs: MAX_TIMER_MS };
    expect(parseDuration('2147483647ms', options)).toEqual({ ok: true, value: 2147483647 });
    expect(parseDuration('2147483648ms', options)).toEqual({
      ok: false,
      refusals: [
        {
          message:
            'must be a duration above zero and at most 2147483647ms, a whole number followed by ms, s, m or h (such as 30s)',
        },
      ],
    });
    expect(parseDuration('597h', options).ok).toBe(false);
  });

  test('accepts the smallest duration it is given and refuses one millisecond less', () => {
    const options = { minMs: 3_600_000 };
    expect(parseDuration('1h', options)).toEqual({ ok: true, value: 3_600_000 });
    expect(parseDuration('3599999ms', options)).toEqual({
      ok: false,
      refusals: [
        {
          message:
            'must be a duration of at least 3600000ms, a whole number followed by ms, s, m or h (such as 30s)',
        },
      ],
    });
  });
});
