import { describe, expect, test } from '@jest/globals';
import { parseHost, parseHostPort } from '../../src/config/host-port.js';

describe('parseHost', () => {
  test.each([
    ['localhost', 'localhost'],
    ['SMTP.Example.COM', 'smtp.example.com'],
    ['crm_db', 'crm_db'],
    ['mail-1.internal', 'mail-1.internal'],
    ['10.0.0.5', '10.0.0.5'],
    ['::1', '::1'],
    ['[::1]', '::1'],
    ['[2001:DB8:0:0::1]', '2001:db8::1'],
  ])('accepts %j as %j', (text, host) => {
    expect(parseHost(text)).toEqual({ ok: true, value: host });
  });

  test.each([
    '',
    'smtp.example.com:587',
    'exa mple.com',
    'example..com',
    '-example.com',
    'example.com.',
    '1.2.3',
    '0x7f.1',
    '010.0.0.1',
    '[10.0.0.1]',
    '[localhost]',
    'ho$t',
    `${'a'.repeat(64)}.com`,
  ])('refuses %j as no host name or address', (text) => {
    expect(parseHost(text)).toEqual({
      ok: false,
      refusals: [{ message: 'must be a host name or an IP address' }],
    });
  });
});

describe('parseHostPort', () => {
  test.each([
    ['localhost:8080', 'localhost', 8080],
    ['0.0.0.0:8080', '0.0.0.0', 8080],
    ['[::1]:8080', '::1', 8080],
    ['[::]:443', '::', 443],
    ['N8N:5678', 'n8n', 5678],
  ])('reads %j as host %j and port %j', (text, host, port) => {
    expect(parseHostPort(text)).toEqual({ ok: true, value: { host, port } });
  });

  test('reads :8080 as every interface when an empty host is allowed', () => {
    expect(parseHostPort(':8080', { allowEmptyHost: true })).toEqual({
      ok: true,
      value: { host: '', port: 8080 },
    });
  });

  test('refuses :8080 where a host is required', () => {
    expect(parseHostPort(':8080').ok).toBe(false);
  });

  test.each([
    ['localhost', 'must be a host and a port'],
    ['::1:8080', 'must be a host and a port'],
    ['localhost:0', 'must end in a port from 1 to 65535'],
    ['localhost:65536', 'must end in a port from 1 to 65535'],
    ['localhost:http', 'must end in a port from 1 to 65535'],
    ['localhost:', 'must end in a port from 1 to 65535'],
    ['bad host:80', 'the host must be a host name or an IP address'],
    ['[::1:80', 'must be a host and a port'],
  ])('refuses %j', (text, message) => {
    expect(JSON.stringify(parseHostPort(text))).toContain(message);
  });
});
