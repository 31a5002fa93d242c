import { describe, expect, test } from '@jest/globals';
import type { CidrRange } from '../../../src/config.js';
import { parseCidr } from '../../../src/config/cidr.js';
import { cidrContains, clientAddress } from '../../../src/http/guards/client-address.js';

function ranges(...texts: string[]): CidrRange[] {
  return texts.map((text) => {
    const parsed = parseCidr(text);
    if (!parsed.ok) throw new Error(`test range ${text} does not parse`);
    return parsed.value;
  });
}

const PROXIES = ranges('10.0.0.0/8', '192.168.0.0/16', 'fd00::/8');

describe('cidrContains', () => {
  test.each([
    ['10.0.0.0/8', '10.255.1.2', true],
    ['10.0.0.0/8', '11.0.0.1', false],
    ['10.0.0.0/9', '10.127.255.255', true],
    ['10.0.0.0/9', '10.128.0.0', false],
    ['192.168.1.5/32', '192.168.1.5', true],
    ['192.168.1.5/32', '192.168.1.6', false],
    ['0.0.0.0/0', '203.0.113.9', true],
    ['0.0.0.0/0', '2001:db8::1', false],
    ['10.0.0.0/8', '::ffff:10.1.2.3', true],
    ['::ffff:10.0.0.0/104', '10.1.2.3', true],
    ['::ffff:10.0.0.0/104', '::ffff:10.1.2.3', true],
    ['::ffff:10.0.0.0/104', '11.1.2.3', false],
    ['2001:db8::/32', '2001:DB8:ffff::1', true],
    ['2001:db8::/32', '2001:db9::1', false],
    ['fe80::/10', 'febf::1', true],
    ['fe80::/10', 'fec0::1', false],
    ['::/0', '10.0.0.1', false],
    ['10.0.0.0/8', 'not an address', false],
    ['10.0.0.0/8', '10.1', false],
  ])('knows whether %s holds %s', (range, address, expected) => {
    const [parsed] = ranges(range);
    expect(cidrContains(parsed!, address)).toBe(expected);
  });
});

describe('clientAddress', () => {
  test.each<[string, string | undefined, string | string[] | undefined, CidrRange[], string]>([
    ['answers the peer when no proxy is trusted', '203.0.113.9', undefined, [], '203.0.113.9'],
    [
      'never reads X-Forwarded-For without trusted proxies',
      '10.0.0.1',
      '198.51.100.7',
      [],
      '10.0.0.1',
    ],
    [
      'ignores X-Forwarded-For from an untrusted peer',
      '203.0.113.9',
      '198.51.100.7',
      PROXIES,
      '203.0.113.9',
    ],
    ['answers a trusted peer that forwards nothing', '10.0.0.1', undefined, PROXIES, '10.0.0.1'],
    [
      'answers the hop a single proxy appended',
      '10.0.0.1',
      '198.51.100.7',
      PROXIES,
      '198.51.100.7',
    ],
    [
      'walks a chain of trusted proxies',
      '10.0.0.1',
      '198.51.100.7, 192.168.4.4, 10.9.9.9',
      PROXIES,
      '198.51.100.7',
    ],
    [
      'stops at the first untrusted hop, ignoring spoofed leftmost entries',
      '10.0.0.1',
      '1.1.1.1, 2.2.2.2, 198.51.100.7, 10.9.9.9',
      PROXIES,
      '198.51.100.7',
    ],
    [
      'does not trust a spoofed hop that claims a trusted address left of the client',
      '10.0.0.1',
      '10.5.5.5, 198.51.100.7',
      PROXIES,
      '198.51.100.7',
    ],
    [
      'answers the leftmost hop when every hop is trusted',
      '10.0.0.1',
      '192.168.1.1, 10.2.2.2',
      PROXIES,
      '192.168.1.1',
    ],
    [
      'reads repeated X-Forwarded-For headers in order',
      '10.0.0.1',
      ['1.1.1.1, 198.51.100.7', '10.9.9.9'],
      PROXIES,
      '198.51.100.7',
    ],
    [
      'unmaps an IPv4-mapped peer before matching',
      '::ffff:10.0.0.1',
      '198.51.100.7',
      PROXIES,
      '198.51.100.7',
    ],
    [
      'unmaps an IPv4-mapped peer in the answer',
      '::ffff:203.0.113.9',
      undefined,
      [],
      '203.0.113.9',
    ],
    ['unmaps an IPv4-mapped hop', '10.0.0.1', '::ffff:198.51.100.7', PROXIES, '198.51.100.7'],
    [
      'skips an IPv4-mapped hop inside a trusted range',
      '10.0.0.1',
      '198.51.100.7, ::ffff:10.3.3.3',
      PROXIES,
      '198.51.100.7',
    ],
    [
      'treats an IPv4-mapped range as the IPv4 range',
      '10.0.0.1',
      '198.51.100.7',
      ranges('::ffff:10.0.0.0/104'),
      '198.51.100.7',
    ],
    [
      'matches an IPv4-mapped peer against an IPv4-mapped range',
      '::ffff:10.0.0.1',
      '198.51.100.7',
      ranges('::ffff:10.0.0.0/104'),
      '198.51.100.7',
    ],
    [
      'walks IPv6 hops behind an IPv6 proxy',
      'fd00::1',
      '2001:db8::7, fd12::3',
      PROXIES,
      '2001:db8::7',
    ],
    ['answers IPv6 in canonical form', 'fd00::1', '2001:DB8:0:0::7', PROXIES, '2001:db8::7'],
    ['answers an IPv6 peer in canonical form', '2001:DB8::0:9', undefined, PROXIES, '2001:db8::9'],
    [
      'stops at a malformed rightmost hop and answers the proxy',
      '10.0.0.1',
      '198.51.100.7, unknown',
      PROXIES,
      '10.0.0.1',
    ],
    [
      'stops at a malformed hop and answers the last good one',
      '10.0.0.1',
      'garbage, 10.2.2.2',
      PROXIES,
      '10.2.2.2',
    ],
    [
      'never reaches a client named left of a malformed hop',
      '10.0.0.1',
      '198.51.100.7, 10.1, 10.2.2.2',
      PROXIES,
      '10.2.2.2',
    ],
    ['treats a zoned IPv6 hop as malformed', 'fd00::1', 'fe80::1%eth0', PROXIES, 'fd00::1'],
    ['answers the peer for an empty X-Forwarded-For', '10.0.0.1', '', PROXIES, '10.0.0.1'],
    [
      'ignores empty list elements',
      '10.0.0.1',
      '198.51.100.7, , 10.2.2.2,',
      PROXIES,
      '198.51.100.7',
    ],
    ['reads an IPv4 hop with a port', '10.0.0.1', '198.51.100.7:5123', PROXIES, '198.51.100.7'],
    [
      'reads a bracketed IPv6 hop with and without a port',
      'fd00::1',
      '[2001:db8::7]:5123, [fd00::2]',
      PROXIES,
      '2001:db8::7',
    ],
    [
      'answers an empty string for a peer Node could not name',
      undefined,
      '198.51.100.7',
      PROXIES,
      '',
    ],
    ['answers an unparseable peer as given', 'unix-socket', '198.51.100.7', PROXIES, 'unix-socket'],
  ])('%s', (_name, peer, forwardedFor, trusted, expected) => {
    expect(clientAddress(peer, forwardedFor, trusted)).toBe(expected);
  });
});
