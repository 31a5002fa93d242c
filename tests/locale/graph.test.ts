import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { and, eq } from 'drizzle-orm';
import { users, type User } from '../../src/users/tables.js';
import { bearerFor, createSessionUser, createUser, createWorkspace } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

const SUPPORTED = ['en-US', 'es-ES', 'de-DE', 'fr-FR'];
const SET_LOCALE = 'mutation ($locale: String!) { setLocale(locale: $locale) }';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(() => svc.stop());

async function storedLocale(user: User): Promise<string | null> {
  const [row] = await svc.db.database.db
    .select({ locale: users.locale })
    .from(users)
    .where(and(eq(users.workspaceId, user.workspaceId), eq(users.id, user.id)));
  return row?.locale ?? null;
}

/** A new member of the test workspace and the Cookie header of a session of theirs. */
function signedIn(): Promise<{ user: User; cookie: string }> {
  return createSessionUser(svc.db.database.db, svc.workspace);
}

async function anonymousLocale(acceptLanguage?: string): Promise<unknown> {
  const headers: Record<string, string> =
    acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage };
  const { body } = await svc.anonymous('{ locale }', {}, headers);
  expect(body.errors).toBeUndefined();
  return body.data?.locale;
}

describe('locale for an anonymous caller', () => {
  test('answers the supported locale the header names exactly', async () => {
    expect(await anonymousLocale('de-DE')).toBe('de-DE');
  });

  test('honours q-values over the order the header lists ranges in', async () => {
    expect(await anonymousLocale('de-DE;q=0.4, fr-FR;q=0.8, en-US;q=0.6')).toBe('fr-FR');
  });

  test('reaches the supported locale of a language asked for alone or with another region', async () => {
    expect(await anonymousLocale('es')).toBe('es-ES');
    expect(await anonymousLocale('es-MX, en;q=0.5')).toBe('es-ES');
  });

  test('passes over unsupported languages and the wildcard to the next match', async () => {
    expect(await anonymousLocale('ja, *;q=0.9, de;q=0.2')).toBe('de-DE');
  });

  test('answers en-US when the header names nothing supported', async () => {
    expect(await anonymousLocale('ja-JP, zh;q=0.8, *;q=0.1')).toBe('en-US');
  });

  test('answers en-US without an Accept-Language header', async () => {
    expect(await anonymousLocale()).toBe('en-US');
  });
});

describe('locale for a signed-in caller', () => {
  test('follows the header while the account has stored no choice', async () => {
    const { cookie } = await signedIn();
    const { body } = await svc.graph('{ locale }', {}, { cookie, 'accept-language': 'fr' });
    expect(body.data).toEqual({ locale: 'fr-FR' });
  });

  test("answers the account's stored choice over the header, through a session or a token", async () => {
    const { user, cookie } = await signedIn();
    await svc.graph(SET_LOCALE, { locale: 'de-DE' }, { cookie });
    const session = await svc.graph('{ locale }', {}, { cookie, 'accept-language': 'es-ES' });
    expect(session.body.data).toEqual({ locale: 'de-DE' });
    const token = await bearerFor(svc.db.database.db, user, { scopes: ['contacts:read'] });
    const viaToken = await svc.graph('{ locale }', {}, { ...token, 'accept-language': 'es-ES' });
    expect(viaToken.body.data).toEqual({ locale: 'de-DE' });
  });

  test('passes over a stored choice the deployment no longer serves', async () => {
    const { user, cookie } = await signedIn();
    await svc.db.database.db
      .update(users)
      .set({ locale: 'it-IT' })
      .where(and(eq(users.workspaceId, user.workspaceId), eq(users.id, user.id)));
    const { body } = await svc.graph('{ locale }', {}, { cookie, 'accept-language': 'es' });
    expect(body.data).toEqual({ locale: 'es-ES' });
  });
});

describe('supportedLocales', () => {
  test('lists every supported locale with the default first', async () => {
    const { body } = await svc.graph('{ supportedLocales }');
    expect(body.data).toEqual({ supportedLocales: SUPPORTED });
  });

  test('needs a credential, unlike locale', async () => {
    const { body } = await svc.anonymous('{ supportedLocales }');
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
    });
  });
});

describe('setLocale', () => {
  test('stores the choice on the account and answers it', async () => {
    const { user, cookie } = await signedIn();
    const { body } = await svc.graph(SET_LOCALE, { locale: 'es-ES' }, { cookie });
    expect(body).toEqual({ data: { setLocale: 'es-ES' } });
    expect(await storedLocale(user)).toBe('es-ES');
    const me = await svc.graph('{ me { locale } }', {}, { cookie });
    expect(me.body.data).toEqual({ me: { locale: 'es-ES' } });
  });

  test('accepts a listed locale in any letter case and stores it as the list spells it', async () => {
    const { user, cookie } = await signedIn();
    const { body } = await svc.graph(SET_LOCALE, { locale: 'fr-fr' }, { cookie });
    expect(body.data).toEqual({ setLocale: 'fr-FR' });
    expect(await storedLocale(user)).toBe('fr-FR');
  });

  test('refuses a locale not in the list with locale_unknown and the list, storing nothing', async () => {
    const { user, cookie } = await signedIn();
    for (const locale of ['it-IT', 'es', '', 'de-DE-x-private']) {
      const { body } = await svc.graph(SET_LOCALE, { locale }, { cookie });
      expect(body.data).toBeNull();
      expect(body.errors?.[0]?.path).toEqual(['setLocale']);
      expect(body.errors?.[0]?.extensions).toEqual({
        code: 'VALIDATION',
        reason: 'locale_unknown',
        meta: { supported: SUPPORTED },
      });
    }
    expect(await storedLocale(user)).toBeNull();
  });

  test('changes only the caller, not an account of another workspace', async () => {
    const other = await createWorkspace(svc.db.database.db);
    const { user, cookie } = await signedIn();
    const twin = await createUser(svc.db.database.db, other, { email: user.email });
    await svc.graph(SET_LOCALE, { locale: 'de-DE' }, { cookie });
    expect(await storedLocale(user)).toBe('de-DE');
    expect(await storedLocale(twin)).toBeNull();
  });

  test('needs a credential', async () => {
    const { body } = await svc.anonymous(SET_LOCALE, { locale: 'de-DE' });
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  test('a token needs users:write for it, and nothing is stored without', async () => {
    const user = await createUser(svc.db.database.db, svc.workspace);
    const narrow = await bearerFor(svc.db.database.db, user, { scopes: ['users:read'] });
    const refused = await svc.graph(SET_LOCALE, { locale: 'de-DE' }, narrow);
    expect(refused.body.errors?.[0]?.extensions).toEqual({
      code: 'UNAUTHORIZED',
      reason: 'scope_missing',
      scope: 'users:write',
      meta: { scope: 'users:write' },
    });
    expect(await storedLocale(user)).toBeNull();
    const writer = await bearerFor(svc.db.database.db, user, { scopes: ['users:write'] });
    const allowed = await svc.graph(SET_LOCALE, { locale: 'de-DE' }, writer);
    expect(allowed.body.data).toEqual({ setLocale: 'de-DE' });
  });
});
