// SPEC 8.2 webhook allow list: the pure address rules of src/webhooks/address.ts.
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import {
  hostPortListed,
  judgeAddress,
  parseWebhookUrl,
  registrationVerdict,
  type AllowList,
} from '../../src/webhooks/address.js';
import { sendOnce } from '../../src/webhooks/send.js';
import { retryDelayMs } from '../../src/webhooks/worker.js';

function allowList(text: string): AllowList {
  const { config, problems } = loadConfig({ SVC_WEBHOOK_ALLOWED_HOSTS: text });
  expect(problems).toEqual([]);
  return config.webhooks;
}
const none = allowList('');

describe('internal addresses are refused unless allowed', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private 10/8'],
    ['172.16.0.1', 'private 172.16/12'],
    ['192.168.1.1', 'private 192.168/16'],
    ['100.64.0.1', 'shared 100.64/10'],
    ['0.0.0.0', 'unspecified'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['::1', 'IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fc00::1', 'unique local'],
    ['fd12:3456::1', 'unique local'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
    ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
  ])('%s (%s)', (address) => {
    expect(judgeAddress(address, none, false)).toBe('internal');
  });

  test.each(['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    'public %s is open on any port',
    (address) => {
      expect(judgeAddress(address, none, false)).toBeNull();
    },
  );
});

describe('an IPv6 address carrying an IPv4 address is judged as that IPv4 address', () => {
  test.each([
    ['::7f00:1', 'IPv4-compatible 127.0.0.1'],
    ['::127.0.0.1', 'IPv4-compatible 127.0.0.1, dotted as Node’s resolver writes it'],
    ['0:0:0:0:0:0:7f00:1', 'IPv4-compatible 127.0.0.1, written in full'],
    ['::7f12:3456', 'IPv4-compatible 127.18.52.86'],
    ['::a00:1', 'IPv4-compatible 10.0.0.1'],
    ['::c0a8:101', 'IPv4-compatible 192.168.1.1'],
    ['::6440:1', 'IPv4-compatible 100.64.0.1'],
    ['::e000:1', 'IPv4-compatible 224.0.0.1'],
    ['::2', 'IPv4-compatible 0.0.0.2'],
    ['::ffff:7f00:1', 'IPv4-mapped 127.0.0.1, hexadecimal'],
    ['0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped 127.0.0.1, written in full'],
    ['::ffff:192.168.0.1', 'IPv4-mapped 192.168.0.1'],
    ['::ffff:100.64.0.1', 'IPv4-mapped 100.64.0.1'],
    ['::ffff:0.0.0.0', 'IPv4-mapped 0.0.0.0'],
    ['::ffff:255.255.255.255', 'IPv4-mapped broadcast'],
    ['64:ff9b::127.0.0.1', 'NAT64 of 127.0.0.1, dotted'],
    ['64:ff9b::c0a8:101', 'NAT64 of 192.168.1.1'],
    ['64:ff9b::f000:1', 'NAT64 of 240.0.0.1'],
    ['64:ff9b:1::7f00:1', 'local-use NAT64 of 127.0.0.1'],
    ['64:ff9b:1::a00:1', 'local-use NAT64 of 10.0.0.1'],
    ['64:ff9b:1:ffff::7f00:1', 'local-use NAT64 of 127.0.0.1, other subnet'],
    ['2002:7f00:1::', '6to4 of 127.0.0.1'],
    ['2002:7f00:1:5::1', '6to4 of 127.0.0.1, with subnet and host'],
    ['2002:a00:1::1', '6to4 of 10.0.0.1'],
    ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
    ['2002:6440:1::', '6to4 of 100.64.0.1'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo, client 127.0.0.1'],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'Teredo, client 10.0.0.1'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo, client 192.0.2.45 (documentation)'],
    ['2001:0:a00:1::f7f7:f7f7', 'Teredo, server 10.0.0.1'],
    ['2001:0:7f00:1::', 'Teredo, server 127.0.0.1'],
  ])('%s (%s) is internal', (address) => {
    expect(judgeAddress(address, none, false)).toBe('internal');
  });

  test.each([
    ['::808:808', 'IPv4-compatible 8.8.8.8'],
    ['::ffff:5db8:d822', 'IPv4-mapped 93.184.216.34'],
    ['64:ff9b:1::808:808', 'local-use NAT64 of 8.8.8.8'],
    ['2002:808:808::1', '6to4 of 8.8.8.8'],
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'Teredo, server 65.54.227.120, client 8.8.8.8'],
  ])('%s (%s) is public', (address) => {
    expect(judgeAddress(address, none, false)).toBeNull();
  });

  test.each([
    ['::', 'IPv6 unspecified'],
    ['::1', 'IPv6 loopback'],
    ['::ffff:0:7f00:1', 'IPv4-translated (RFC 6145)'],
    ['100::1', 'discard prefix'],
    ['2001:db8::1', 'documentation prefix'],
  ])('%s (%s) stays internal as an IPv6 address', (address) => {
    expect(judgeAddress(address, allowList('0.0.0.0/0'), false)).toBe('internal');
  });
});

describe('always refused, even when listed', () => {
  const everything = allowList('0.0.0.0/0,::/0,metadata:80');
  test.each([
    '169.254.0.1',
    '169.254.169.254',
    'fe80::1',
    '100.100.100.200',
    '168.63.129.16',
    '192.0.0.192',
    'fd00:ec2::23',
    'fd00:ec2::254',
    'fd20:ce::254',
    'fd00:a9fe:a9fe::1',
    'fd00:42::42',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '::a9fe:a9fe',
    '::169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::ffff:169.254.0.1',
    '::ffff:100.100.100.200',
    '::6464:64c8',
    '64:ff9b::a83f:8110',
    '64:ff9b:1::a9fe:a9fe',
    '64:ff9b:1::c000:c0',
    '2002:a9fe:a9fe::',
    '2002:a9fe:1::1',
    '2002:c000:c0::',
    '2002:a83f:8110::1',
    '2001:0:4136:e378:8000:63bf:5601:5601',
    '2001:0:a9fe:a9fe::f7f7:f7f7',
    '2001:0:6464:64c8::f7f7:f7f7',
  ])('%s', (address) => {
    expect(judgeAddress(address, everything, false)).toBe('always_refused');
    expect(judgeAddress(address, everything, true)).toBe('always_refused');
  });

  test('neighbours stay open to an entry listing their range', () => {
    const list = allowList('100.100.100.0/24,fd00:ec2::/64,192.0.0.0/24');
    expect(judgeAddress('100.100.100.201', list, false)).toBeNull();
    expect(judgeAddress('fd00:ec2::24', list, false)).toBeNull();
    expect(judgeAddress('192.0.0.193', list, false)).toBeNull();
    expect(judgeAddress('100.100.100.200', list, false)).toBe('always_refused');
  });
});

describe('CIDR entries match the address connected to, on every port', () => {
  const list = allowList('127.0.0.1/32,10.0.0.0/8,fd00:1::/32');
  test('inside the range', () => {
    expect(judgeAddress('127.0.0.1', list, false)).toBeNull();
    expect(judgeAddress('10.200.0.1', list, false)).toBeNull();
    expect(judgeAddress('::ffff:10.0.0.9', list, false)).toBeNull();
    expect(judgeAddress('64:ff9b::a00:9', list, false)).toBeNull();
    expect(judgeAddress('fd00:1::5', list, false)).toBeNull();
  });
  test('outside the range', () => {
    expect(judgeAddress('127.0.0.2', list, false)).toBe('internal');
    expect(judgeAddress('192.168.0.1', list, false)).toBe('internal');
  });
  test('an embedded form of a listed IPv4 address is open like the address itself', () => {
    for (const address of ['::7f00:1', '::ffff:7f00:1', '64:ff9b:1::7f00:1', '2002:7f00:1::']) {
      expect(judgeAddress(address, list, false)).toBeNull();
    }
    expect(judgeAddress('::7f00:2', list, false)).toBe('internal');
    expect(judgeAddress('2002:c0a8:1::', list, false)).toBe('internal');
  });
  test('a Teredo address is open only when each internal address it carries is listed', () => {
    expect(judgeAddress('2001:0:4136:e378:8000:63bf:80ff:fffe', list, false)).toBeNull();
    expect(judgeAddress('2001:0:a00:1::80ff:fffe', list, false)).toBeNull();
    expect(judgeAddress('2001:0:c0a8:1::80ff:fffe', list, false)).toBe('internal');
  });
  test('an IPv6 range does not open the IPv4 addresses its members carry', () => {
    const v6 = allowList('::/0');
    expect(judgeAddress('::7f00:1', v6, false)).toBe('internal');
    expect(judgeAddress('2002:7f00:1::', v6, false)).toBe('internal');
    expect(judgeAddress('::1', v6, false)).toBeNull();
    expect(judgeAddress('::', v6, false)).toBeNull();
  });
  test('`::1` and `::` are not opened by an IPv4 range', () => {
    const v4 = allowList('0.0.0.0/8');
    expect(judgeAddress('::1', v4, false)).toBe('internal');
    expect(judgeAddress('::', v4, false)).toBe('internal');
    expect(judgeAddress('::2', v4, false)).toBeNull();
  });
  test('registration of an IP literal in the range passes on any port', () => {
    expect(registrationVerdict(new URL('http://127.0.0.1:1/x'), list)).toBeNull();
    expect(registrationVerdict(new URL('https://10.0.0.1:9999/'), list)).toBeNull();
    expect(registrationVerdict(new URL('http://192.168.0.1/'), list)).toBe('internal');
  });
});

describe('host:port entries match the URL before lookup', () => {
  const list = allowList('n8n:5678,web:80,secure:443,[::1]:8080');
  test('host and port', () => {
    expect(hostPortListed(new URL('http://n8n:5678/hook'), list)).toBe(true);
    expect(hostPortListed(new URL('http://N8N:5678/hook'), list)).toBe(true);
    expect(hostPortListed(new URL('http://n8n:5679/hook'), list)).toBe(false);
    expect(hostPortListed(new URL('http://n8n/hook'), list)).toBe(false);
  });
  test('a URL without a port uses 80 for http and 443 for https', () => {
    expect(hostPortListed(new URL('http://web/'), list)).toBe(true);
    expect(hostPortListed(new URL('https://web/'), list)).toBe(false);
    expect(hostPortListed(new URL('https://secure/'), list)).toBe(true);
    expect(hostPortListed(new URL('http://secure/'), list)).toBe(false);
  });
  test('an IP literal host:port opens that URL only', () => {
    expect(registrationVerdict(new URL('http://[::1]:8080/'), list)).toBeNull();
    expect(registrationVerdict(new URL('http://[::1]:8081/'), list)).toBe('internal');
  });
  test('a listed host opens internal addresses after lookup, not metadata', () => {
    expect(judgeAddress('10.0.0.5', list, true)).toBeNull();
    expect(judgeAddress('169.254.169.254', list, true)).toBe('always_refused');
  });
});

describe('registration judges the address a URL host parses to', () => {
  test.each([
    'http://[::127.0.0.1]/',
    'http://[::7f00:1]/',
    'http://[0:0:0:0:0:0:127.0.0.1]:8080/x',
    'http://[::a00:1]/',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0x7f.1/',
    'http://127.1/',
    'http://017700000001/',
    'http://0177.0.0.1/',
    'http://0x7f.0x0.0x0.0x1/',
    'http://127.0.0.1./',
    'http://%31%32%37.0.0.1/',
    'http://127.255.255.254:8080/',
    'http://0/',
    'http://0.0.0.0:80/',
    'http://10.1/',
    'http://167772161/',
    'http://[::1]/',
    'http://[0:0:0:0:0:0:0:1]/',
    'http://[0000::1]:8080/',
    'http://[::]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/',
    'https://[::ffff:10.0.0.1]/',
    'http://[64:ff9b::127.0.0.1]/',
    'http://[64:ff9b:1::7f00:1]/',
    'http://[2002:7f00:1::]/',
    'https://[2002:a00:1::1]:8443/',
    'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',
    'http://[2001:0:7f00:1::]/',
    'http://[fc00::1]/',
    'http://[fd00::1]/',
    'http://[ff02::1]/',
    'http://[::ffff:0:7f00:1]/',
  ])('%s is internal', (url) => {
    expect(registrationVerdict(new URL(url), none)).toBe('internal');
  });

  test.each([
    'http://169.254.169.254/latest/meta-data/',
    'http://169.254.43518/',
    'http://2852039166/',
    'http://0xa9fea9fe/',
    'http://0xa9.0xfe.0xa9.0xfe/',
    'http://0251.0376.0251.0376/',
    'http://[::169.254.169.254]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[64:ff9b::169.254.169.254]/',
    'http://[64:ff9b:1::a9fe:a9fe]/',
    'http://[2002:a9fe:a9fe::]/',
    'http://[2001:0:4136:e378:8000:63bf:5601:5601]/',
    'http://[fe80::1]/',
    'http://[fd00:ec2::254]/',
    'http://100.100.100.200/',
    'http://[::ffff:6464:64c8]/',
  ])('%s is always refused', (url) => {
    expect(registrationVerdict(new URL(url), allowList('0.0.0.0/0,::/0'))).toBe('always_refused');
  });

  test.each([
    'http://[::808:808]/',
    'http://[::ffff:8.8.8.8]/',
    'http://[64:ff9b::8.8.8.8]/',
    'http://[2002:808:808::]/',
    'https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/',
    'http://134744072/',
  ])('%s carries a public address and passes', (url) => {
    expect(registrationVerdict(new URL(url), none)).toBeNull();
  });
});

describe('delivery judges with the same rules', () => {
  const send = (url: string, address: string) =>
    sendOnce({
      url,
      body: Buffer.from('{}'),
      headers: {},
      allow: none,
      resolve: () => Promise.resolve([{ address, family: address.includes(':') ? 6 : 4 }]),
    });

  test('an IPv4-compatible literal is refused before connecting', async () => {
    expect(await send('http://[::127.0.0.1]:9/', '')).toEqual({
      kind: 'refused',
      host: '::7f00:1',
      address: '::7f00:1',
      allowable: true,
    });
  });

  test.each([
    ['::7f00:1', true],
    ['::127.0.0.1', true],
    ['64:ff9b:1::a9fe:a9fe', false],
    ['2002:a00:1::', true],
    ['2001:0:a00:1::f7f7:f7f7', true],
  ])('a name resolving to %s is refused before connecting', async (address, allowable) => {
    expect(await send('http://hooks.example/', address)).toEqual({
      kind: 'refused',
      host: 'hooks.example',
      address,
      allowable,
    });
  });
});

describe('URLs', () => {
  test.each(['not a url', 'ftp://example.com/', 'http://', 'http://u:p@example.com/', ''])(
    '%j does not parse as a webhook URL',
    (text) => {
      expect(parseWebhookUrl(text)).toBeNull();
    },
  );
  test('registrationVerdict judges IP literals only; judgeRegistration looks names up', () => {
    expect(registrationVerdict(new URL('http://localhost:9/'), none)).toBeNull();
  });
});

test('retry waits widen with jitter and cap at one hour', () => {
  expect(retryDelayMs(1, () => 0.5)).toBe(5000);
  expect(retryDelayMs(2, () => 0.5)).toBe(10000);
  expect(retryDelayMs(1, () => 0)).toBe(4000);
  expect(retryDelayMs(1, () => 1)).toBe(6000);
  expect(retryDelayMs(30, () => 0.5)).toBe(3600000);
});
