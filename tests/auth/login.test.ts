import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createUser, PASSWORD, sessionCookieFor, tokenFor, bearer } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';
import type { User } from '../../src/users/tables.js';

const LOGIN = `mutation ($email: String!, $password: String!) {
  login(email: $email, password: $password) { me { id email role capabilities grantable } }
}`;

let svc: TestService;
let member: User;

beforeAll(async () => {
  // Requests come through a trusted proxy on loopback, so each test can speak for its own address.
  svc = await startTestService({ env: { SVC_TRUSTED_PROXIES: '127.0.0.1/32' } });
  member = await createUser(svc.db.database.db, svc.workspace, { email: 'Member.One@Example.com' });
});

afterAll(() => svc.stop());

/** Each call comes from its own client address, so budgets never mix between tests. */
let address = 0;
function from(ip = `198.51.100.${++address}`) {
  return { 'x-forwarded-for': ip };
}

describe('login', () => {
  test('signs in whatever the letter case of the address and sets the session cookie', async () => {
    const response = await svc.request(`/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: LOGIN,
        variables: { email: 'member.one@example.com', password: PASSWORD },
      }),
    });
    const body = (await response.json()) as {
      data: { login: { me: { email: string; role: string } } };
    };
    expect(body.data.login.me).toEqual({
      id: member.id,
      email: 'Member.One@Example.com',
      role: 'member',
      capabilities: [],
      grantable: ['member'],
    });
    const cookie = response.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(
      /^__Host-svc_session=[\w-]+; Path=\/; Max-Age=2592000; HttpOnly; Secure; SameSite=Lax$/,
    );
  });

  test('the session cookie signs later requests in, and logout ends it', async () => {
    const cookie = await sessionCookieFor(svc.db.database.db, member);
    const me = await svc.graph('{ me { id } }', {}, { cookie });
    expect(me.body.data).toEqual({ me: { id: member.id } });
    const out = await svc.request(`/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify({ query: 'mutation { logout }' }),
    });
    expect(await out.json()).toEqual({ data: { logout: true } });
    expect(out.headers.get('set-cookie')).toContain('__Host-svc_session=; Path=/; Max-Age=0');
    const after = await svc.graph('{ me { id } }', {}, { cookie });
    expect(after.body.errors?.[0]?.extensions).toMatchObject({
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
    });
  });

  test('a wrong password and an unknown address answer the same credentials_invalid', async () => {
    const wrong = await svc.anonymous(LOGIN, {
      email: member.email,
      password: 'not the password at all',
    });
    const unknown = await svc.anonymous(LOGIN, { email: 'nobody@example.com', password: PASSWORD });
    for (const { body } of [wrong, unknown]) {
      expect(body.data).toBeNull();
      expect(body.errors?.[0]?.extensions).toEqual({
        code: 'UNAUTHENTICATED',
        reason: 'credentials_invalid',
        meta: {},
      });
    }
    expect(wrong.body.errors?.[0]?.message).toBe(unknown.body.errors?.[0]?.message);
  });

  test('a disabled account cannot sign in', async () => {
    const disabled = await createUser(svc.db.database.db, svc.workspace, { disabled: true });
    const { body } = await svc.anonymous(LOGIN, { email: disabled.email, password: PASSWORD });
    expect(body.errors?.[0]?.extensions.reason).toBe('credentials_invalid');
  });

  test('an account with no role signs in and reads me with an empty role and no capabilities', async () => {
    const roleless = await createUser(svc.db.database.db, svc.workspace, { role: null });
    const { body } = await svc.anonymous(LOGIN, { email: roleless.email, password: PASSWORD });
    expect(body.data).toEqual({
      login: {
        me: {
          id: roleless.id,
          email: roleless.email,
          role: '',
          capabilities: [],
          grantable: ['member'],
        },
      },
    });
  });

  test('an admin holds manage_users, manage_webhooks and erase_records and may grant every stock role', async () => {
    const { body } = await svc.graph('{ me { role capabilities grantable } }');
    expect(body.data).toEqual({
      me: {
        role: 'admin',
        capabilities: ['manage_users', 'manage_webhooks', 'erase_records'],
        grantable: ['admin', 'member'],
      },
    });
  });
});

describe('the login failure budget', () => {
  test('the eleventh failure within a minute from one address is RATE_LIMITED with retryAfter, even with the right password', async () => {
    const headers = from();
    for (let i = 0; i < 10; i += 1) {
      const { body } = await svc.anonymous(
        LOGIN,
        { email: member.email, password: `wrong password ${i}` },
        headers,
      );
      expect(body.errors?.[0]?.extensions.reason).toBe('credentials_invalid');
    }
    const { status, body } = await svc.anonymous(
      LOGIN,
      { email: member.email, password: PASSWORD },
      headers,
    );
    expect(status).toBe(200);
    const error = body.errors?.[0];
    expect(error?.extensions).toMatchObject({ code: 'RATE_LIMITED', reason: 'rate_limited' });
    const retryAfter = error?.extensions.retryAfter as number;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(error?.extensions.meta).toEqual({ retryAfter });
  });

  test('another address keeps its own budget', async () => {
    const { body } = await svc.anonymous(
      LOGIN,
      { email: member.email, password: PASSWORD },
      from(),
    );
    expect(body.data).toMatchObject({ login: { me: { id: member.id } } });
  });

  test('successful sign-ins never spend the budget', async () => {
    const headers = from();
    for (let i = 0; i < 12; i += 1) {
      const { body } = await svc.anonymous(
        LOGIN,
        { email: member.email, password: PASSWORD },
        headers,
      );
      expect(body.data).toMatchObject({ login: { me: { id: member.id } } });
    }
  });

  test('failures are counted in PostgreSQL, so every server process shares the budget', async () => {
    const other = await startTestService({
      db: svc.db,
      env: { SVC_TRUSTED_PROXIES: '127.0.0.1/32' },
    });
    try {
      const headers = from();
      for (let i = 0; i < 10; i += 1) {
        const target = i % 2 === 0 ? svc : other;
        await target.anonymous(
          LOGIN,
          { email: member.email, password: 'wrong again and again' },
          headers,
        );
      }
      const { body } = await other.anonymous(
        LOGIN,
        { email: member.email, password: PASSWORD },
        headers,
      );
      expect(body.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
    } finally {
      await other.service.shutdown();
    }
  });

  test('there is no per-account lockout: the account signs in from another address', async () => {
    const { body } = await svc.anonymous(
      LOGIN,
      { email: member.email, password: PASSWORD },
      from(),
    );
    expect(body.data).toMatchObject({ login: { me: { id: member.id } } });
  });
});

describe('tokens', () => {
  test('a token acts as its owner', async () => {
    const token = await tokenFor(svc.db.database.db, member);
    const { body } = await svc.graph('{ me { id } }', {}, bearer(token));
    expect(body.data).toEqual({ me: { id: member.id } });
  });

  test('a malformed bearer token answers invalid token', async () => {
    const { body } = await svc.graph('{ me { id } }', {}, { authorization: 'Bearer a1_nope' });
    expect(body.errors?.[0]).toMatchObject({
      message: 'invalid token',
      extensions: { code: 'UNAUTHENTICATED', reason: 'authentication_required' },
    });
  });

  test('a token of a disabled account stops at once', async () => {
    const user = await createUser(svc.db.database.db, svc.workspace);
    const token = await tokenFor(svc.db.database.db, user);
    await svc.db.database.sql`update users set disabled_at = now() where id = ${user.id}`;
    const { body } = await svc.graph('{ me { id } }', {}, bearer(token));
    expect(body.errors?.[0]?.message).toBe('invalid token');
  });
});
