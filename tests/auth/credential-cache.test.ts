import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { and, eq } from 'drizzle-orm';
import { buildCatalogue } from '../../src/auth/access.js';
import {
  CredentialCache,
  HELD_MS,
  holdCredentials,
  type HeldCredentials,
} from '../../src/auth/credential-cache.js';
import { resolveCredential, type Credential } from '../../src/auth/credentials.js';
import { parseSecret } from '../../src/auth/secrets.js';
import { deleteSession, sessionFromCookie } from '../../src/auth/sessions.js';
import { revokeApiToken } from '../../src/auth/tokens.js';
import type { Actor } from '../../src/context.js';
import { announceRevocation, REVOCATIONS_CHANNEL } from '../../src/events/revocations.js';
import { users, type User } from '../../src/users/tables.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import {
  bearer,
  createUser,
  createWorkspace,
  sessionCookieFor,
  tokenFor,
} from '../support/factories.js';
import { captureLogger } from '../support/service.js';

const catalogue = buildCatalogue([]);
let db: TestDatabase;
let held: HeldCredentials;
/** The cache's clock: real time plus what a test moved it on. */
let skew = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  held = await holdCredentials(db.database, captureLogger().log, { now: () => Date.now() + skew });
});

afterAll(async () => {
  await held?.close();
  await db?.drop();
});

async function resolve(headers: { authorization?: string; cookie?: string }): Promise<Credential> {
  return resolveCredential(db.database.db, catalogue, headers, held.cache);
}

/** A new account of a new workspace and a token of it, read twice: the cache holds it. */
async function heldToken(): Promise<{
  user: User;
  token: string;
  headers: { authorization: string };
}> {
  const workspace = await createWorkspace(db.database.db);
  const user = await createUser(db.database.db, workspace);
  const token = await tokenFor(db.database.db, user);
  const headers = bearer(token);
  for (let i = 0; i < 2; i += 1) expect(await resolve(headers)).toMatchObject(signedInAs(user));
  return { user, token, headers };
}

function signedInAs(user: User) {
  return { actor: expect.objectContaining({ userId: user.id }) };
}

/** Revokes the token in the database only, announcing nothing (an operator's SQL). */
async function revokeBehindTheBack(token: string): Promise<void> {
  const parsed = parseSecret('a1_', token);
  await db.database.sql`update api_tokens set revoked_at = now() where id = ${parsed?.id ?? ''}`;
}

/** Resolves once a notice on `svc_revocations` has reached this process's listeners. */
async function nextNotice(send: () => Promise<unknown>): Promise<void> {
  let heard!: () => void;
  const arrived = new Promise<void>((resolve) => (heard = resolve));
  // Listeners of a channel are told in the order they listened: the cache's first.
  const listener = await db.database.sql.listen(REVOCATIONS_CHANNEL, () => heard());
  try {
    await send();
    await arrived;
  } finally {
    await listener.unlisten();
  }
}

describe('credentials held by a serving process', () => {
  test('a credential seen once is read afresh the next time', async () => {
    const workspace = await createWorkspace(db.database.db);
    const user = await createUser(db.database.db, workspace);
    const token = await tokenFor(db.database.db, user);
    expect(await resolve(bearer(token))).toMatchObject(signedInAs(user));
    await revokeBehindTheBack(token);
    expect(await resolve(bearer(token))).toEqual({ invalidToken: true });
  });

  test('a credential in use is read again once it has been held for HELD_MS', async () => {
    const { user, token, headers } = await heldToken();
    await revokeBehindTheBack(token);
    // Nothing announced the change: the held row answers until its time is up.
    expect(await resolve(headers)).toMatchObject(signedInAs(user));
    skew += HELD_MS;
    expect(await resolve(headers)).toEqual({ invalidToken: true });
  });

  test('a held credential still checks the secret presented', async () => {
    const { token, headers } = await heldToken();
    const parsed = parseSecret('a1_', token);
    if (!parsed) throw new Error('token did not parse');
    const ids = Buffer.from(token.slice(3), 'base64url').subarray(0, 32);
    const forged = `a1_${Buffer.concat([ids, Buffer.alloc(32, 7)]).toString('base64url')}`;
    expect(await resolve(bearer(forged))).toEqual({ invalidToken: true });
    expect(await resolve(headers)).toHaveProperty('actor.token.id', parsed.id);
  });

  test('revoking a held token in this process refuses it at once', async () => {
    const { user, token, headers } = await heldToken();
    const id = parseSecret('a1_', token)?.id ?? '';
    await revokeApiToken(db.database.db, user.workspaceId, user.id, id);
    expect(await resolve(headers)).toEqual({ invalidToken: true });
  });

  test('signing out a held session refuses its cookie at once', async () => {
    const workspace = await createWorkspace(db.database.db);
    const user = await createUser(db.database.db, workspace);
    const cookie = await sessionCookieFor(db.database.db, user);
    for (let i = 0; i < 2; i += 1) {
      expect(await resolve({ cookie })).toMatchObject(signedInAs(user));
    }
    const sessionId = parseSecret('', sessionFromCookie(cookie) ?? '')?.id ?? '';
    await deleteSession(db.database.db, user.workspaceId, sessionId);
    expect(await resolve({ cookie })).toEqual({ actor: null });
  });

  test('what a transaction still open announces is not held, so its commit takes effect at once', async () => {
    const { user, headers } = await heldToken();
    await db.database.db.transaction(async (tx) => {
      await tx
        .update(users)
        .set({ disabledAt: new Date() })
        .where(and(eq(users.workspaceId, user.workspaceId), eq(users.id, user.id)));
      await announceRevocation(tx, { workspaceId: user.workspaceId, userId: user.id });
      // Other connections still read the account enabled, and do not keep what they read.
      for (let i = 0; i < 2; i += 1) expect(await resolve(headers)).toMatchObject(signedInAs(user));
    });
    expect(await resolve(headers)).toEqual({ invalidToken: true });
  });

  test('a revocation another process announces drops the credential it names', async () => {
    const { user, token, headers } = await heldToken();
    await revokeBehindTheBack(token);
    expect(await resolve(headers)).toMatchObject(signedInAs(user));
    const payload = JSON.stringify({ workspaceId: user.workspaceId, userId: user.id });
    await nextNotice(() => db.database.sql`select pg_notify(${REVOCATIONS_CHANNEL}, ${payload})`);
    expect(await resolve(headers)).toEqual({ invalidToken: true });
  });

  test('a revocation naming another account leaves a held credential held', async () => {
    const { user, token, headers } = await heldToken();
    await revokeBehindTheBack(token);
    const payload = JSON.stringify({ workspaceId: user.workspaceId, userId: crypto.randomUUID() });
    await nextNotice(() => db.database.sql`select pg_notify(${REVOCATIONS_CHANNEL}, ${payload})`);
    expect(await resolve(headers)).toMatchObject(signedInAs(user));
  });

  test('an unreadable notice drops everything held', async () => {
    const { token, headers } = await heldToken();
    await revokeBehindTheBack(token);
    await nextNotice(() => db.database.sql`select pg_notify(${REVOCATIONS_CHANNEL}, 'not json')`);
    expect(await resolve(headers)).toEqual({ invalidToken: true });
  });

  test('when the listening connection comes back, nothing held before is used', async () => {
    const { token, headers } = await heldToken();
    await revokeBehindTheBack(token);
    let listens = 0;
    let relistened!: () => void;
    const again = new Promise<void>((resolve) => (relistened = resolve));
    const listener = await db.database.sql.listen(
      REVOCATIONS_CHANNEL,
      () => {},
      () => {
        listens += 1;
        if (listens > 1) relistened();
      },
    );
    try {
      await db.database.sql`
        select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and query ilike 'listen%'`;
      await again;
      expect(await resolve(headers)).toEqual({ invalidToken: true });
    } finally {
      await listener.unlisten();
    }
  });
});

describe('CredentialCache', () => {
  const actor: Actor = {
    userId: 'u',
    workspaceId: 'w',
    role: 'member',
    capabilities: new Set(),
    token: { id: 't', name: 'n', scopes: null },
    sessionId: null,
    expiresAt: new Date(10_000),
  };
  const credential = { actor, secretHash: Buffer.alloc(32), lastUsedAt: null };

  function holding(now: { at: number }): CredentialCache {
    const cache = new CredentialCache(() => now.at);
    cache.listened();
    cache.keep('k', credential, cache.mark());
    cache.keep('k', credential, cache.mark());
    return cache;
  }

  test('a credential past its expiry is not answered', () => {
    const now = { at: 9_000 };
    const cache = holding(now);
    now.at = 9_999;
    expect(cache.read('k')).toBe(credential);
    now.at = 10_000;
    expect(cache.read('k')).toBeUndefined();
  });

  test('a read begun before a revocation is not kept', () => {
    const cache = new CredentialCache(() => 0);
    cache.listened();
    cache.keep('k', credential, cache.mark());
    const mark = cache.mark();
    cache.forget({ workspaceId: 'other' });
    cache.keep('k', credential, mark);
    expect(cache.read('k')).toBeUndefined();
  });

  test('nothing is held while the cache is not listening', () => {
    const cache = new CredentialCache(() => 0);
    for (let i = 0; i < 2; i += 1) cache.keep('k', credential, cache.mark());
    expect(cache.read('k')).toBeUndefined();
  });

  test('two announcements of one revocation keep it uncached until both notices came', () => {
    const lasting = { ...credential, actor: { ...actor, expiresAt: null } };
    const cache = new CredentialCache(() => 0);
    cache.listened();
    const payload = '{"workspaceId":"w","userId":"u"}';
    cache.announced({ workspaceId: 'w', userId: 'u' }, payload);
    cache.announced({ workspaceId: 'w', userId: 'u' }, payload);
    const held = () => {
      for (let i = 0; i < 2; i += 1) cache.keep('k', lasting, cache.mark());
      return cache.read('k');
    };
    cache.noticed(payload);
    expect(held()).toBeUndefined();
    cache.noticed(payload);
    expect(held()).toBe(lasting);
  });

  test('an announcement whose notice never comes stops counting after a minute', () => {
    const lasting = { ...credential, actor: { ...actor, expiresAt: null } };
    const now = { at: 0 };
    const cache = new CredentialCache(() => now.at);
    cache.listened();
    cache.announced({ workspaceId: 'w' }, '{"workspaceId":"w"}');
    for (let i = 0; i < 2; i += 1) cache.keep('k', lasting, cache.mark());
    expect(cache.read('k')).toBeUndefined();
    now.at = 60_000;
    for (let i = 0; i < 2; i += 1) cache.keep('k', lasting, cache.mark());
    expect(cache.read('k')).toBe(lasting);
  });
});
