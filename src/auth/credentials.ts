import { isPromise } from 'node:util/types';
import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Actor } from '../context.js';
import type { Db } from '../db/client.js';
import { prepared } from '../db/prepared.js';
import { users } from '../users/tables.js';
import { workspaces } from '../workspaces/tables.js';
import { capabilitiesOf, type AccessCatalogue } from './access.js';
import { credentialKey, type CredentialCache, type HeldCredential } from './credential-cache.js';
import { parseSecret, secretMatches, type ParsedSecret } from './secrets.js';
import { sessionFromCookie } from './sessions.js';
import { apiTokens, sessions } from './tables.js';

export const TOKEN_PREFIX = 'a1_';
/** `lastUsedAt` is written at most once a minute per token, not on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Who presented the request: an actor, nobody (no credential, or a session that ended),
 * or `invalid-token` for a bearer token that does not work (SPEC 5: `invalid token`).
 */
export type Credential = { actor: Actor } | { actor: null } | { invalidToken: true };

const anonymous: Credential = { actor: null };

/**
 * The request's caller. With a serving process's `cache` (src/auth/credential-cache.ts), a
 * credential read in the last few seconds and not revoked since is not read again; its
 * secret is still checked. Such a caller is answered at once, not as a promise: the
 * common request waits for nothing here.
 */
export function resolveCredential(
  db: Db,
  catalogue: AccessCatalogue,
  headers: { authorization?: string; cookie?: string },
  cache?: CredentialCache,
): Credential | Promise<Credential> {
  if (headers.authorization !== undefined) {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization)?.[1];
    if (!bearer) return invalidToken;
    const actor = actorFromToken(db, catalogue, bearer, cache);
    return isPromise(actor) ? actor.then(tokenCredential) : tokenCredential(actor);
  }
  const cookie = sessionFromCookie(headers.cookie);
  if (!cookie) return anonymous;
  const actor = actorFromSession(db, catalogue, cookie, cache);
  return isPromise(actor) ? actor.then(sessionCredential) : sessionCredential(actor);
}

const invalidToken: Credential = { invalidToken: true };

function tokenCredential(actor: Actor | null): Credential {
  return actor ? { actor } : invalidToken;
}

function sessionCredential(actor: Actor | null): Credential {
  return actor ? { actor } : anonymous;
}

/**
 * One credential row by its key, with the account it signs in: found only while that
 * account is enabled, its workspace active and the credential's own `live` tests hold.
 */
function credentialLookup<F extends Record<string, PgColumn>>(
  db: Db,
  credential: typeof apiTokens | typeof sessions,
  fields: F,
  live: SQL[],
) {
  return db
    .select({ ...fields, userId: users.id, role: users.role })
    .from(credential)
    .innerJoin(
      users,
      and(eq(users.workspaceId, credential.workspaceId), eq(users.id, credential.userId)),
    )
    .innerJoin(workspaces, eq(workspaces.id, credential.workspaceId))
    .where(
      and(
        eq(credential.workspaceId, sql.placeholder('workspaceId')),
        eq(credential.id, sql.placeholder('id')),
        ...live,
        sql`${users.disabledAt} is null`,
        sql`${workspaces.deactivatedAt} is null`,
      ),
    );
}

/**
 * The credential reads run on every request: each is built once (src/db/prepared.ts)
 * and PostgreSQL plans it once per connection.
 */
const tokenLookup = prepared('svc_token_lookup', (db) =>
  credentialLookup(
    db,
    apiTokens,
    {
      secretHash: apiTokens.secretHash,
      name: apiTokens.name,
      scopes: apiTokens.scopes,
      lastUsedAt: apiTokens.lastUsedAt,
      expiresAt: apiTokens.expiresAt,
    },
    [
      sql`${apiTokens.revokedAt} is null`,
      sql`(${apiTokens.expiresAt} is null or ${apiTokens.expiresAt} > now())`,
    ],
  ),
);

const sessionLookup = prepared('svc_session_lookup', (db) =>
  credentialLookup(
    db,
    sessions,
    { secretHash: sessions.secretHash, expiresAt: sessions.expiresAt },
    [sql`${sessions.expiresAt} > now()`],
  ),
);

/**
 * A credential's row and caller, read from `cache` when held there (answered at once),
 * else by `read` (and then held); null unless the presented secret matches its hash.
 */
function credentialOf(
  kind: 'token' | 'session',
  parsed: ParsedSecret,
  cache: CredentialCache | undefined,
  read: () => Promise<HeldCredential | null>,
): HeldCredential | null | Promise<HeldCredential | null> {
  const key = cache && credentialKey(kind, parsed.workspaceId, parsed.id);
  const held = key ? cache.read(key) : undefined;
  if (held) return secretMatches(held.secretHash, parsed.secret) ? held : null;
  const mark = cache?.mark() ?? 0;
  return read().then((found) => {
    if (!found || !secretMatches(found.secretHash, parsed.secret)) return null;
    return key ? cache.keep(key, found, mark) : found;
  });
}

function actorFromToken(
  db: Db,
  catalogue: AccessCatalogue,
  text: string,
  cache: CredentialCache | undefined,
): Actor | null | Promise<Actor | null> {
  const parsed = parseSecret(TOKEN_PREFIX, text);
  if (!parsed) return null;
  const held = credentialOf('token', parsed, cache, async () => {
    const [row] = await tokenLookup(db, { workspaceId: parsed.workspaceId, id: parsed.id });
    if (!row) return null;
    const token = {
      id: parsed.id,
      name: row.name,
      scopes: row.scopes ? new Set(row.scopes) : null,
    };
    return {
      actor: { ...actorOf(catalogue, parsed, row), token, sessionId: null },
      secretHash: row.secretHash,
      lastUsedAt: row.lastUsedAt,
    };
  });
  return isPromise(held)
    ? held.then((found) => tokenActor(db, parsed, found))
    : tokenActor(db, parsed, held);
}

/**
 * The caller of a token found, once its use is noted: `lastUsedAt` is written at most once
 * a minute, and only then is there anything to wait for.
 */
function tokenActor(
  db: Db,
  parsed: ParsedSecret,
  held: HeldCredential | null,
): Actor | null | Promise<Actor | null> {
  if (!held) return null;
  if (held.lastUsedAt && Date.now() - held.lastUsedAt.getTime() <= LAST_USED_RESOLUTION_MS) {
    return held.actor;
  }
  // Noted first, so the requests that meet it meanwhile do not write it too.
  held.lastUsedAt = new Date();
  return noteUse(db, parsed, held.actor);
}

/** Writes a token's `lastUsedAt`; answers its caller once written. */
async function noteUse(db: Db, parsed: ParsedSecret, actor: Actor): Promise<Actor> {
  await db
    .update(apiTokens)
    .set({ lastUsedAt: sql`now()` })
    .where(and(eq(apiTokens.workspaceId, parsed.workspaceId), eq(apiTokens.id, parsed.id)));
  return actor;
}

function actorFromSession(
  db: Db,
  catalogue: AccessCatalogue,
  text: string,
  cache: CredentialCache | undefined,
): Actor | null | Promise<Actor | null> {
  const parsed = parseSecret('', text);
  if (!parsed) return null;
  const held = credentialOf('session', parsed, cache, async () => {
    const [row] = await sessionLookup(db, { workspaceId: parsed.workspaceId, id: parsed.id });
    if (!row) return null;
    return {
      actor: { ...actorOf(catalogue, parsed, row), token: null, sessionId: parsed.id },
      secretHash: row.secretHash,
      lastUsedAt: null,
    };
  });
  return isPromise(held) ? held.then((found) => found?.actor ?? null) : (held?.actor ?? null);
}

/** The caller a credential row signs in, short of the credential itself. */
function actorOf(
  catalogue: AccessCatalogue,
  parsed: ParsedSecret,
  row: { userId: string; role: string | null; expiresAt: Date | null },
): Omit<Actor, 'token' | 'sessionId'> {
  return {
    userId: row.userId,
    workspaceId: parsed.workspaceId,
    role: row.role,
    capabilities: capabilitiesOf(catalogue, row.role),
    expiresAt: row.expiresAt,
  };
}

/**
 * Whether the credential `actor` was resolved from still works for the same account and
 * role. A stream asks once it is registered for revocation notices: a revocation that
 * committed between the request's credential read and that registration announced itself
 * too early to reach it, and this read sees it instead.
 */
export async function credentialLive(db: Db, actor: Actor): Promise<boolean> {
  const key = { workspaceId: actor.workspaceId };
  const [row] = actor.token
    ? await tokenLookup(db, { ...key, id: actor.token.id })
    : actor.sessionId
      ? await sessionLookup(db, { ...key, id: actor.sessionId })
      : [];
  return row !== undefined && row.userId === actor.userId && row.role === actor.role;
}
