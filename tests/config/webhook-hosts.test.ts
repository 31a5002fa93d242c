import { describe, expect, test } from '@jest/globals';
import { parseWebhookAllowList, parseWebhookHost } from '../../src/config/webhook-hosts.js';

describe('parseWebhookHost', () => {
  test.each([
    ['127.0.0.1/32', '127.0.0.1/32'],
    ['10.1.0.0/16', '10.1.0.0/16'],
    ['::ffff:10.0.0.0/104', '10.0.0.0/8'],
    ['fd00::/8', 'fd00::/8'],
  ])('reads %j as the range %j', (text, range) => {
    expect(parseWebhookHost(text)).toMatchObject({ ok: true, value: { cidr: { text: range } } });
  });

  test.each([
    ['host:5678', 'host', 5678],
    ['n8n.internal:443', 'n8n.internal', 443],
    ['10.0.0.5:8080', '10.0.0.5', 8080],
    ['[::1]:8080', '::1', 8080],
  ])('reads %j as host %j on port %j', (text, host, port) => {
    expect(parseWebhookHost(text)).toEqual({ ok: true, value: { hostPort: { host, port } } });
  });

  test.each(['n8n', 'hooks.example.com'])('refuses the host name %j without a port', (text) => {
    expect(parseWebhookHost(text)).toEqual({
      ok: false,
      refusals: [{ message: 'must give each host name a port, such as n8n:5678' }],
    });
  });

  test.each(['10.0.0.5', '::1', 'fd00::1'])('refuses the bare address %j', (text) => {
    expect(JSON.stringify(parseWebhookHost(text))).toContain('not bare addresses');
  });

  test.each(['n8n:0', 'n8n:99999', 'n8n:http', 'bad host:80', '10.0.0.0/40', '::ffff:0:0/64'])(
    'refuses the malformed entry %j',
    (text) => {
      expect(parseWebhookHost(text).ok).toBe(false);
    },
  );
});

describe('parseWebhookAllowList', () => {
  test('splits ranges from host:port entries', () => {
    const result = parseWebhookAllowList('127.0.0.1/32, n8n:5678 ,[::1]:8080');
    expect(result).toMatchObject({
      ok: true,
      value: {
        allowedCidrs: [{ text: '127.0.0.1/32' }],
        allowedHostPorts: [
          { host: 'n8n', port: 5678 },
          { host: '::1', port: 8080 },
        ],
      },
    });
  });

  test('reads an empty text as an empty allow list', () => {
    expect(parseWebhookAllowList('')).toEqual({
      ok: true,
      value: { allowedCidrs: [], allowedHostPorts: [] },
    });
  });

  test('quotes the entry that is refused', () => {
    expect(parseWebhookAllowList('n8n:5678, n8n')).toEqual({
      ok: false,
      refusals: [{ message: 'must give each host name a port, such as n8n:5678', got: 'n8n' }],
    });
  });
});
