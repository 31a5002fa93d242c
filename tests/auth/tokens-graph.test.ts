import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { and, eq } from 'drizzle-orm';
import { apiTokens } from '../../src/auth/tables.js';
import type { User } from '../../src/users/tables.js';
import {
  bearer,
  createSessionUser,
  createTokenUser,
  createUser,
  createWorkspace,
  sessionFor,
  tokenFor,
} from '../support/factories.js';
import { startTestService, type GraphBody, type TestService } from '../support/service.js';

const TOKEN_FIELDS = 'id name scopes allAreas legacy createdAt expiresAt lastUsedAt revokedAt';
const CREATE = `mutation ($name: String!, $scopes: [String!], $ttlDays: Int) {
  apiTokenCreate(name: $name, scopes: $scopes, ttlDays: $ttlDays) {
    secret token { ${TOKEN_FIELDS} }
  }
}`;
const REVOKE = `mutation ($id: UUID!) { apiTokenRevoke(id: $id) { ${TOKEN_FIELDS} } }`;
const LIST = `query ($first: Int, $after: String) {
  apiTokens(first: $first, after: $after) {
    edges { cursor node { ${TOKEN_FIELDS} } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const EVERY_AREA_SCOPES = [
  'users:write',
  'contacts:write',
  'tasks:write',
  'webhooks:write',
  'meta:write',
];

interface TokenView {
  id: string;
  name: string;
  scopes: string[];
  allAreas: boolean;
  legacy: boolean;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(() => svc.stop());

const db = () => svc.db.database.db;

/** A member of the test workspace (or `workspace`) with a signed-in browser session. */
async function signedIn(workspace: { id: string } = svc.workspace) {
  const { user, cookie } = await createSessionUser(db(), workspace);
  return { user, headers: { cookie } };
}

async function create(
  headers: Record<string, string>,
  variables: { name: string; scopes?: string[]; ttlDays?: number },
): Promise<{ secret: string; token: TokenView }> {
  const { body } = await svc.graph(CREATE, variables, headers);
  expect(body.errors).toBeUndefined();
  return (body.data as { apiTokenCreate: { secret: string; token: TokenView } }).apiTokenCreate;
}

async function list(headers: Record<string, string>, variables: Record<string, unknown> = {}) {
  const { body } = await svc.graph(LIST, variables, headers);
  expect(body.errors).toBeUndefined();
  return (
    body.data as {
      apiTokens: {
        edges: { cursor: string; node: TokenView }[];
        pageInfo: { hasNextPage: boolean; endCursor: string | null };
      };
    }
  ).apiTokens;
}

/** The token id a secret names (bytes 16 to 32 of the part after `a1_`). */
function tokenIdOf(secret: string): string {
  const hex = Buffer.from(secret.slice(3), 'base64url').subarray(16, 32).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

async function storedTokens(user: User) {
  return db()
    .select()
    .from(apiTokens)
    .where(and(eq(apiTokens.workspaceId, user.workspaceId), eq(apiTokens.userId, user.id)));
}

function refusal(body: GraphBody) {
  expect(body.data).toBeNull();
  return body.errors?.[0];
}

describe('apiTokenCreate', () => {
  test('answers a secret starting with a1_ that carries at least 256 random bits', async () => {
    const { user, headers } = await signedIn();
    const { secret, token } = await create(headers, { name: 'ci' });
    expect(secret).toMatch(/^a1_[A-Za-z0-9_-]+$/);
    const decoded = Buffer.from(secret.slice(3), 'base64url');
    // Workspace id and token id (16 bytes each) name the row; 32 random bytes follow.
    expect(decoded.length).toBe(64);
    expect(decoded.subarray(0, 16).toString('hex')).toBe(user.workspaceId.replaceAll('-', ''));
    expect(tokenIdOf(secret)).toBe(token.id);
    const other = await create(headers, { name: 'ci' });
    expect(Buffer.from(other.secret.slice(3), 'base64url').subarray(32)).not.toEqual(
      decoded.subarray(32),
    );
  });

  test('the secret signs requests in as its user through Authorization: Bearer', async () => {
    const { user, headers } = await signedIn();
    const { secret } = await create(headers, { name: 'script' });
    const { body } = await svc.graph('{ me { id } }', {}, bearer(secret));
    expect(body).toEqual({ data: { me: { id: user.id } } });
  });

  test('stores only the SHA-256 of the random part, never the secret', async () => {
    const { user, headers } = await signedIn();
    const { secret, token } = await create(headers, { name: 'kept hashed' });
    const [row] = await storedTokens(user);
    expect(row?.id).toBe(token.id);
    const random = Buffer.from(secret.slice(3), 'base64url').subarray(32);
    expect(row?.secretHash).toEqual(createHash('sha256').update(random).digest());
    const texts = Object.values(row ?? {}).map((value) =>
      Buffer.isBuffer(value) ? value.toString('base64url') : JSON.stringify(value),
    );
    for (const text of texts) {
      expect(text).not.toContain(secret.slice(3));
      expect(text).not.toContain(random.toString('base64url'));
    }
  });

  test('without scopes the token holds every area the deployment declares, with write access', async () => {
    const { headers } = await signedIn();
    const { token } = await create(headers, { name: 'everything' });
    expect(token).toMatchObject({
      name: 'everything',
      scopes: EVERY_AREA_SCOPES,
      allAreas: true,
      legacy: false,
      revokedAt: null,
      lastUsedAt: null,
    });
  });

  test('without ttlDays, or with 0, the token never expires', async () => {
    const { headers } = await signedIn();
    expect((await create(headers, { name: 'forever' })).token.expiresAt).toBeNull();
    expect((await create(headers, { name: 'zero', ttlDays: 0 })).token.expiresAt).toBeNull();
  });

  test('ttlDays sets the expiry that many days ahead', async () => {
    const { headers } = await signedIn();
    const before = Date.now();
    const { token } = await create(headers, { name: 'week', ttlDays: 7 });
    const expires = new Date(token.expiresAt ?? '').getTime();
    const week = 7 * 24 * 60 * 60 * 1000;
    expect(expires).toBeGreaterThanOrEqual(before + week);
    expect(expires).toBeLessThanOrEqual(Date.now() + week);
  });

  test('trims the name and lists each scope once', async () => {
    const { headers } = await signedIn();
    const { token } = await create(headers, {
      name: '  nightly export  ',
      scopes: ['contacts:read', 'contacts:read', 'tasks:write'],
    });
    expect(token).toMatchObject({
      name: 'nightly export',
      scopes: ['contacts:read', 'tasks:write'],
      allAreas: false,
    });
  });

  test.each([
    ['an empty name', { name: '' }, 'token_name_required', {}],
    ['a blank name', { name: '   ' }, 'token_name_required', {}],
    ['an empty scope list', { name: 'n', scopes: [] }, 'scopes_required', {}],
    [
      'a scope without access',
      { name: 'n', scopes: ['contacts'] },
      'scope_malformed',
      { scope: 'contacts' },
    ],
    [
      'an access beyond read and write',
      { name: 'n', scopes: ['contacts:admin'] },
      'scope_malformed',
      { scope: 'contacts:admin' },
    ],
    [
      'an area the schema does not declare',
      { name: 'n', scopes: ['crm:read'] },
      'area_unknown',
      { area: 'crm' },
    ],
    ['a negative lifetime', { name: 'n', ttlDays: -1 }, 'lifetime_negative', {}],
    [
      'a lifetime past the cap',
      { name: 'n', ttlDays: 106752 },
      'lifetime_too_long',
      { maxDays: 106751 },
    ],
  ])(
    'refuses %s with VALIDATION and its reason, minting nothing',
    async (_what, variables, reason, meta) => {
      const { user, headers } = await signedIn();
      const { body } = await svc.graph(CREATE, variables, headers);
      const error = refusal(body);
      expect(error?.path).toEqual(['apiTokenCreate']);
      expect(error?.extensions).toEqual({ code: 'VALIDATION', reason, meta });
      expect(await storedTokens(user)).toEqual([]);
    },
  );

  test('a lifetime of exactly the cap is accepted', async () => {
    const { headers } = await signedIn();
    const { token } = await create(headers, { name: 'long', ttlDays: 106751 });
    expect(token.expiresAt).not.toBeNull();
  });
});

describe('what a token reaches', () => {
  test('meta:read reads version but not users', async () => {
    const { headers } = await signedIn();
    const { secret } = await create(headers, { name: 'meta', scopes: ['meta:read'] });
    const version = await svc.graph('{ version }', {}, bearer(secret));
    expect(version.body.data).toEqual({ version: '0.9.0' });
    const people = await svc.graph('{ users { edges { node { id } } } }', {}, bearer(secret));
    expect(refusal(people.body)?.extensions).toEqual({
      code: 'UNAUTHORIZED',
      reason: 'scope_missing',
      scope: 'users:read',
      meta: { scope: 'users:read' },
    });
  });

  test('users:read reads users but not version', async () => {
    const { user, headers } = await signedIn();
    const { secret } = await create(headers, { name: 'people', scopes: ['users:read'] });
    const people = await svc.graph(
      '{ users(first: 200) { edges { node { id } } } }',
      {},
      bearer(secret),
    );
    const ids = (people.body.data as { users: { edges: { node: { id: string } }[] } }).users.edges;
    expect(ids.map((edge) => edge.node.id)).toContain(user.id);
    const version = await svc.graph('{ version }', {}, bearer(secret));
    expect(refusal(version.body)?.extensions).toMatchObject({
      reason: 'scope_missing',
      scope: 'meta:read',
    });
  });

  test('write access to an area includes reading it', async () => {
    const { headers } = await signedIn();
    const { secret } = await create(headers, { name: 'writer', scopes: ['meta:write'] });
    const { body } = await svc.graph('{ version }', {}, bearer(secret));
    expect(body.data).toEqual({ version: '0.9.0' });
  });

  test('a token past its expiry is refused with invalid token', async () => {
    const { user, headers } = await signedIn();
    const { secret, token } = await create(headers, { name: 'short', ttlDays: 1 });
    expect((await svc.graph('{ me { id } }', {}, bearer(secret))).body.data).toEqual({
      me: { id: user.id },
    });
    await db()
      .update(apiTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(and(eq(apiTokens.workspaceId, user.workspaceId), eq(apiTokens.id, token.id)));
    const { body } = await svc.graph('{ me { id } }', {}, bearer(secret));
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.message).toBe('invalid token');
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});

describe('apiTokenRevoke', () => {
  test('a revoked token is refused with invalid token', async () => {
    const { headers } = await signedIn();
    const { secret, token } = await create(headers, { name: 'doomed' });
    const { body } = await svc.graph(REVOKE, { id: token.id }, headers);
    const revoked = (body.data as { apiTokenRevoke: TokenView }).apiTokenRevoke;
    expect(revoked.id).toBe(token.id);
    expect(revoked.revokedAt).not.toBeNull();
    const after = await svc.graph('{ me { id } }', {}, bearer(secret));
    expect(after.body.data).toBeNull();
    expect(after.body.errors?.[0]).toMatchObject({
      message: 'invalid token',
      extensions: { code: 'UNAUTHENTICATED' },
    });
  });

  test('revoking twice keeps the first revocation time', async () => {
    const { headers } = await signedIn();
    const { token } = await create(headers, { name: 'twice' });
    const first = await svc.graph(REVOKE, { id: token.id }, headers);
    const second = await svc.graph(REVOKE, { id: token.id }, headers);
    expect(second.body.data).toEqual(first.body.data);
  });

  test("another user's, another workspace's and an unknown id all answer token_not_found", async () => {
    const { headers } = await signedIn();
    const colleague = await createUser(db(), svc.workspace);
    const outsider = await createUser(db(), await createWorkspace(db()));
    const colleagueSecret = await tokenFor(db(), colleague);
    const outsiderSecret = await tokenFor(db(), outsider);
    const ids = [
      tokenIdOf(colleagueSecret),
      tokenIdOf(outsiderSecret),
      '00000000-0000-4000-8000-000000000000',
    ];
    for (const id of ids) {
      const { body } = await svc.graph(REVOKE, { id }, headers);
      expect(refusal(body)?.extensions).toEqual({
        code: 'NOT_FOUND',
        reason: 'token_not_found',
        meta: {},
      });
    }
    for (const secret of [colleagueSecret, outsiderSecret]) {
      const { body } = await svc.graph('{ me { id } }', {}, bearer(secret));
      expect(body.errors).toBeUndefined();
    }
  });
});

describe('apiTokens', () => {
  test("lists only the caller's own tokens, newest first, revoked and legacy ones marked", async () => {
    const { user, headers } = await signedIn();
    await tokenFor(db(), await createUser(db(), svc.workspace));
    await tokenFor(db(), await createUser(db(), await createWorkspace(db())));
    const legacySecret = await tokenFor(db(), user, { name: 'old' });
    await db()
      .update(apiTokens)
      .set({ scopes: null })
      .where(
        and(eq(apiTokens.workspaceId, user.workspaceId), eq(apiTokens.id, tokenIdOf(legacySecret))),
      );
    const scoped = await create(headers, { name: 'scoped', scopes: ['tasks:read'], ttlDays: 3 });
    const revoked = await create(headers, { name: 'revoked' });
    await svc.graph(REVOKE, { id: revoked.token.id }, headers);
    const { edges, pageInfo } = await list(headers);
    expect(edges.map((edge) => [edge.node.name, edge.node.legacy, edge.node.allAreas])).toEqual([
      ['revoked', false, true],
      ['scoped', false, false],
      ['old', true, true],
    ]);
    expect(edges[0]?.node.revokedAt).not.toBeNull();
    expect(edges[1]?.node).toEqual(scoped.token);
    expect(edges[2]?.node.scopes).toEqual(EVERY_AREA_SCOPES);
    expect(pageInfo).toEqual({ hasNextPage: false, endCursor: edges[2]?.cursor });
  });

  test('pages with first and after until hasNextPage is false', async () => {
    const { headers } = await signedIn();
    for (const name of ['t1', 't2', 't3', 't4', 't5']) await create(headers, { name });
    const names: string[] = [];
    let after: string | null = null;
    const pages: number[] = [];
    for (;;) {
      const page = await list(headers, { first: 2, after });
      pages.push(page.edges.length);
      names.push(...page.edges.map((edge) => edge.node.name));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(pages).toEqual([2, 2, 1]);
    expect(names).toEqual(['t5', 't4', 't3', 't2', 't1']);
  });

  test('refuses a cursor another field issued, or text that is no cursor, with cursor_malformed', async () => {
    const { headers } = await signedIn();
    const people = await svc.graph('{ users(first: 1) { pageInfo { endCursor } } }', {}, headers);
    const foreign = (people.body.data as { users: { pageInfo: { endCursor: string } } }).users
      .pageInfo.endCursor;
    const forged = Buffer.from(JSON.stringify(['apiTokens', 'not-a-uuid'])).toString('base64url');
    for (const after of [foreign, 'garbage', forged]) {
      const { body } = await svc.graph(LIST, { after }, headers);
      expect(refusal(body)?.extensions).toEqual({
        code: 'VALIDATION',
        reason: 'cursor_malformed',
        meta: {},
      });
    }
  });

  test('refuses a page size outside the range with first_out_of_range', async () => {
    const { headers } = await signedIn();
    const { body } = await svc.graph(LIST, { first: 0 }, headers);
    expect(refusal(body)?.extensions).toMatchObject({ reason: 'first_out_of_range' });
  });
});

describe('token management needs a browser session', () => {
  test.each([
    ['apiTokens', LIST, {}],
    ['apiTokenCreate', CREATE, { name: 'sneaky' }],
    ['apiTokenRevoke', REVOKE, { id: '00000000-0000-4000-8000-000000000000' }],
  ])(
    'a token holding every area calling %s is refused with session_required',
    async (field, query, variables) => {
      const { user } = await signedIn();
      const secret = await tokenFor(db(), user);
      const { body } = await svc.graph(query, variables, bearer(secret));
      const error = refusal(body);
      expect(error?.path).toEqual([field]);
      expect(error?.extensions).toMatchObject({ code: 'UNAUTHORIZED', reason: 'session_required' });
      expect(await storedTokens(user)).toHaveLength(1);
    },
  );

  test('an anonymous caller is refused with authentication_required', async () => {
    const { body } = await svc.anonymous(CREATE, { name: 'anon' });
    expect(refusal(body)?.extensions).toMatchObject({
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
    });
  });

  test('a token cannot revoke itself either', async () => {
    const { user } = await signedIn();
    const secret = await tokenFor(db(), user);
    await svc.graph(REVOKE, { id: tokenIdOf(secret) }, bearer(secret));
    const { body } = await svc.graph('{ me { id } }', {}, bearer(secret));
    expect(body.data).toEqual({ me: { id: user.id } });
  });
});

describe('lastUsedAt', () => {
  test('records when a token was last presented', async () => {
    const { user, headers } = await createTokenUser(db(), svc.workspace);
    await svc.graph('{ me { id } }', {}, headers);
    const { body } = await svc.graph(
      '{ apiTokens { edges { node { lastUsedAt } } } }',
      {},
      await sessionFor(db(), user),
    );
    const edges = (body.data?.apiTokens as { edges: { node: { lastUsedAt: string | null } }[] })
      .edges;
    expect(edges).toHaveLength(1);
    expect(Date.now() - Date.parse(edges[0]?.node.lastUsedAt ?? '')).toBeLessThan(60_000);
  });
});
