import { describe, expect, test } from '@jest/globals';
import { parseCidr, parseCidrList } from '../../src/config/cidr.js';

describe('parseCidr', () => {
  test.each([
    ['127.0.0.1/32', '127.0.0.1/32', 4, [127, 0, 0, 1], 32],
    ['10.0.0.0/8', '10.0.0.0/8', 4, [10, 0, 0, 0], 8],
    ['0.0.0.0/0', '0.0.0.0/0', 4, [0, 0, 0, 0], 0],
    ['192.168.1.77/24', '192.168.1.0/24', 4, [192, 168, 1, 0], 24],
    ['10.1.2.3/9', '10.0.0.0/9', 4, [10, 0, 0, 0], 9],
    ['::ffff:10.0.0.0/104', '10.0.0.0/8', 4, [10, 0, 0, 0], 8],
    ['::ffff:192.168.1.5/128', '192.168.1.5/32', 4, [192, 168, 1, 5], 32],
    ['::ffff:0:0/96', '0.0.0.0/0', 4, [0, 0, 0, 0], 0],
  ])('reads %j as %j', (text, normalised, family, bytes, prefix) => {
    expect(parseCidr(text)).toEqual({
      ok: true,
      value: { text: normalised, family, bytes: Uint8Array.from(bytes), prefix },
    });
  });

  test.each([
    ['::1/128', '::1/128', 128],
    ['2001:DB8::/32', '2001:db8::/32', 32],
    ['2001:db8:1:2::5/48', '2001:db8:1::/48', 48],
    ['fe80::/10', 'fe80::/10', 10],
    ['::/0', '::/0', 0],
  ])('reads the IPv6 range %j as %j', (text, normalised, prefix) => {
    const result = parseCidr(text);
    expect(result).toMatchObject({ ok: true, value: { text: normalised, family: 6, prefix } });
    expect(result.ok && result.value.bytes.length).toBe(16);
  });

  test.each(['10.0.0.1', '::1', '::ffff:10.0.0.1'])('refuses the bare address %j', (text) => {
    expect(parseCidr(text)).toEqual({
      ok: false,
      refusals: [{ message: 'must list CIDR ranges such as 10.0.0.5/32, not bare addresses' }],
    });
  });

  test.each(['::ffff:10.0.0.0/95', '::ffff:0:0/80', '::ffff:10.0.0.0/0'])(
    'refuses the IPv4-mapped range %j, shorter than /96',
    (text) => {
      expect(parseCidr(text)).toEqual({
        ok: false,
        refusals: [{ message: 'must not list an IPv4-mapped range shorter than /96' }],
      });
    },
  );

  test.each([
    ['10.0.0.0/33', 'from 0 to 32'],
    ['::1/129', 'from 0 to 128'],
    ['10.0.0.0/', 'from 0 to 32'],
    ['10.0.0.0/-1', 'from 0 to 32'],
    ['10.0.0.0/8.5', 'from 0 to 32'],
    ['10.0.0.0/ 8', 'from 0 to 32'],
    ['10.0.0.0/0x8', 'from 0 to 32'],
  ])('refuses the invalid prefix in %j', (text, range) => {
    expect(JSON.stringify(parseCidr(text))).toContain(`prefix length ${range}`);
  });

  test.each([
    'localhost/32',
    '10.0.0/8',
    '10.0.0.256/32',
    '0x0a.0.0.0/8',
    '10/8',
    'fe80::1%eth0/64',
    '010.0.0.1/8',
    '10.0.0.0/8/8',
    '',
  ])('refuses %j, which is no range', (text) => {
    expect(parseCidr(text).ok).toBe(false);
  });
});

describe('parseCidrList', () => {
  test('reads comma-separated ranges with spaces around the commas', () => {
    const result = parseCidrList('10.0.0.0/8 , 172.16.0.0/12,  ::1/128');
    expect(result.ok && result.value.map((range) => range.text)).toEqual([
      '10.0.0.0/8',
      '172.16.0.0/12',
      '::1/128',
    ]);
  });

  test('reads an empty text as no ranges', () => {
    expect(parseCidrList('')).toEqual({ ok: true, value: [] });
  });

  test('skips empty entries such as a trailing comma', () => {
    const result = parseCidrList('10.0.0.0/8,,');
    expect(result.ok && result.value).toHaveLength(1);
  });

  test('refuses every bad entry and quotes each one', () => {
    expect(parseCidrList('10.0.0.1, 10.0.0.0/8, ::ffff:0:0/90')).toEqual({
      ok: false,
      refusals: [
        {
          message: 'must list CIDR ranges such as 10.0.0.5/32, not bare addresses',
          got: '10.0.0.1',
        },
        { message: 'must not list an IPv4-mapped range shorter than /96', got: '::ffff:0:0/90' },
      ],
    });
  });
});
