// Registration looks a webhook URL's name up (src/webhooks/address.ts judgeRegistration):
// a URL delivery would refuse now is refused at creation, naming the variable that opens it.
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { judgeRegistration, type AllowList, type Resolve } from '../../src/webhooks/address.js';

function allowList(text: string): AllowList {
  const { config, problems } = loadConfig({ SVC_WEBHOOK_ALLOWED_HOSTS: text });
  expect(problems).toEqual([]);
  return config.webhooks;
}
const none = allowList('');

/** A resolver answering `addresses` for every name. */
function answers(...addresses: string[]): Resolve {
  return () =>
    Promise.resolve(
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
}

/** A resolver failing as getaddrinfo does, with `code`. */
function fails(code: string): Resolve {
  return (host) =>
    Promise.reject(Object.assign(new Error(`getaddrinfo ${code} ${host}`), { code }));
}

const judge = (url: string, allow: AllowList, resolve: Resolve, timeoutMs?: number) =>
  judgeRegistration(new URL(url), allow, { resolve, timeoutMs });

describe('a name is judged on every address it resolves to', () => {
  test('a name resolving only to loopback is refused, and could be allowed', async () => {
    expect(await judge('http://hooks.example:5678/', none, answers('127.0.0.1', '::1'))).toEqual({
      kind: 'refused',
      host: 'hooks.example',
      address: '127.0.0.1',
      allowable: true,
    });
  });

  test('one refused address among public ones refuses, as delivery does', async () => {
    expect(await judge('https://hooks.example/', none, answers('8.8.8.8', '10.0.0.7'))).toEqual({
      kind: 'refused',
      host: 'hooks.example',
      address: '10.0.0.7',
      allowable: true,
    });
  });

  test('a metadata address is refused even for a listed host, and cannot be allowed', async () => {
    const listed = allowList('meta.example:80,0.0.0.0/0');
    expect(await judge('http://meta.example/', listed, answers('169.254.169.254'))).toEqual({
      kind: 'refused',
      host: 'meta.example',
      address: '169.254.169.254',
      allowable: false,
    });
  });

  test('a name resolving to public addresses is accepted', async () => {
    expect(
      await judge('https://hooks.example/', none, answers('93.184.216.34', '2606:4700::1')),
    ).toEqual({ kind: 'accepted' });
  });

  test('a host:port entry opens the internal addresses its name resolves to', async () => {
    const listed = allowList('n8n:5678');
    expect(await judge('http://n8n:5678/hook', listed, answers('172.18.0.4'))).toEqual({
      kind: 'accepted',
    });
    expect(await judge('http://n8n:5679/hook', listed, answers('172.18.0.4'))).toMatchObject({
      kind: 'refused',
      address: '172.18.0.4',
    });
  });

  test('a CIDR entry opens the addresses it contains', async () => {
    const listed = allowList('127.0.0.1/32');
    expect(await judge('http://hooks.example:1/', listed, answers('127.0.0.1'))).toEqual({
      kind: 'accepted',
    });
    expect(
      await judge('http://hooks.example:1/', listed, answers('127.0.0.1', '::1')),
    ).toMatchObject({ kind: 'refused', address: '::1' });
  });

  test('an IP literal is judged without a lookup', async () => {
    const resolve = fails('EAI_AGAIN');
    expect(await judge('http://127.0.0.1:9/', none, resolve)).toEqual({
      kind: 'refused',
      host: '127.0.0.1',
      address: '127.0.0.1',
      allowable: true,
    });
    expect(await judge('http://93.184.216.34/', none, resolve)).toEqual({ kind: 'accepted' });
  });

  test('the system resolver reads localhost from the hosts file: loopback, refused', async () => {
    const judged = await judgeRegistration(new URL('http://localhost:5678/'), none);
    expect(judged).toMatchObject({ kind: 'refused', host: 'localhost', allowable: true });
    expect(['127.0.0.1', '::1']).toContain((judged as { address: string }).address);
    expect(
      await judgeRegistration(new URL('http://localhost:5678/'), allowList('localhost:5678')),
    ).toEqual({ kind: 'accepted' });
  });
});

describe('a failed lookup', () => {
  test.each(['ENOTFOUND', 'ENODATA'])(
    '%s (no such name, or no address) is an unknown host',
    async (code) => {
      expect(await judge('https://hooks.example/', none, fails(code))).toEqual({
        kind: 'unknown_host',
        host: 'hooks.example',
      });
    },
  );

  test('an empty answer is an unknown host', async () => {
    expect(await judge('https://hooks.example/', none, answers())).toEqual({
      kind: 'unknown_host',
      host: 'hooks.example',
    });
  });

  test('an unknown name a host:port entry lists is accepted unchecked', async () => {
    expect(await judge('http://n8n:5678/', allowList('n8n:5678'), fails('ENOTFOUND'))).toEqual({
      kind: 'unchecked',
      host: 'n8n',
      error: 'getaddrinfo ENOTFOUND n8n',
    });
  });

  test.each(['EAI_AGAIN', 'EAI_FAIL', 'ETIMEOUT'])(
    'another failure (%s: temporary, or the resolver broken) is accepted unchecked',
    async (code) => {
      expect(await judge('https://hooks.example/', none, fails(code))).toEqual({
        kind: 'unchecked',
        host: 'hooks.example',
        error: `getaddrinfo ${code} hooks.example`,
      });
    },
  );

  test('a lookup that does not answer in time is accepted unchecked', async () => {
    const never: Resolve = () => new Promise(() => {});
    expect(await judge('https://hooks.example/', none, never, 20)).toEqual({
      kind: 'unchecked',
      host: 'hooks.example',
      error: 'lookup took longer than 20 ms',
    });
  });
});
