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

describe('URLs', () => {
  test.each(['not a url', 'ftp://example.com/', 'http://', 'http://u:p@example.com/', ''])(
    '%j does not parse as a webhook URL',
    (text) => {
      expect(parseWebhookUrl(text)).toBeNull();
    },
  );
  test('names are judged at delivery, not at registration', () => {
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
