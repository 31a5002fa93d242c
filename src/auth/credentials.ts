import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Actor } from '../context.js';
import type { Db } from '../db/client.js';
import { prepared } from '../db/prepared.js';
import { users } from '../users/tables.js';
import { workspaces } from '../workspaces/tables.js';
import { capabilitiesOf, type AccessCatalogue } from './access.js';
import { parseSecret, secretMatches } from './secrets.js';
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

export async function resolveCredential(
  db: Db,
  catalogue: AccessCatalogue,
  headers: { authorization?: string; cookie?: string },
): Promise<Credential> {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];
  if (headers.authorization !== undefined) {
    if (!bearer) return { invalidToken: true };
    const actor = await actorFromToken(db, catalogue, bearer);
    return actor ? { actor } : { invalidToken: true };
  }
  const cookie = sessionFromCookie(headers.cookie);
  if (!cookie) return anonymous;
  const actor = await actorFromSession(db, catalogue, cookie);
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

async function actorFromToken(
  db: Db,
  catalogue: AccessCatalogue,
  text: string,
): Promise<Actor | null> {
  const parsed = parseSecret(TOKEN_PREFIX, text);
  if (!parsed) return null;
  const [row] = await tokenLookup(db, { workspaceId: parsed.workspaceId, id: parsed.id });
  if (!row || !secretMatches(row.secretHash, parsed.secret)) return null;
  if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await db
      .update(apiTokens)
      .set({ lastUsedAt: sql`now()` })
      .where(and(eq(apiTokens.workspaceId, parsed.workspaceId), eq(apiTokens.id, parsed.id)));
  }
  return {
    userId: row.userId,
    workspaceId: parsed.workspaceId,
    role: row.role,
    capabilities: capabilitiesOf(catalogue, row.role),
    token: { id: parsed.id, name: row.name, scopes: row.scopes ? new Set(row.scopes) : null },
    sessionId: null,
    expiresAt: row.expiresAt,
  };
}

async function actorFromSession(
  db: Db,
  catalogue: AccessCatalogue,
  text: string,
): Promise<Actor | null> {
  const parsed = parseSecret('', text);
  if (!parsed) return null;
  const [row] = await sessionLookup(db, { workspaceId: parsed.workspaceId, id: parsed.id });
  if (!row || !secretMatches(row.secretHash, parsed.secret)) return null;
  return {
    userId: row.userId,
    workspaceId: parsed.workspaceId,
    role: row.role,
    capabilities: capabilitiesOf(catalogue, row.role),
    token: null,
    sessionId: parsed.id,
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
