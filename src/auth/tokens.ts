import { randomUUID } from 'node:crypto';
import { and, desc, eq, isNotNull, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { checkText, TEXT_MAX } from '../limits.js';
import { announceRevocation } from '../events/revocations.js';
import { EVERY_AREA, type AccessCatalogue } from './access.js';
import { TOKEN_PREFIX } from './credentials.js';
import { mintSecret } from './secrets.js';
import { apiTokens, type ApiToken } from './tables.js';

/** The longest lifetime (SPEC 8.2 SVC_TOKEN_TTL_DAYS: 0 to 106751). */
export const MAX_TOKEN_DAYS = 106751;
const DAY_MS = 24 * 60 * 60 * 1000;
const scopePattern = /^([a-z][a-z0-9_]*):(read|write)$/;

/**
 * Checks scopes as written (`area:access`) against the deployment's areas. Null means
 * "without -scope": every area.
 */
export function validateScopes(
  scopes: readonly string[] | null,
  catalogue: AccessCatalogue,
): string[] {
  if (scopes === null) return [EVERY_AREA];
  if (scopes.length === 0) throw refuse('scopes_required');
  for (const scope of scopes) {
    const match = scopePattern.exec(scope);
    if (!match) throw refuse('scope_malformed', { scope });
    if (!catalogue.areas.has(match[1] as string))
      throw refuse('area_unknown', { area: match[1] as string });
  }
  return [...new Set(scopes)];
}

/** Days to an expiry date; 0 or null never expires. */
export function expiryOf(days: number | null, now = Date.now()): Date | null {
  if (days === null || days === 0) return null;
  if (!Number.isInteger(days) || days < 0) throw refuse('lifetime_negative');
  if (days > MAX_TOKEN_DAYS) throw refuse('lifetime_too_long', { maxDays: MAX_TOKEN_DAYS });
  return new Date(now + days * DAY_MS);
}

export interface NewToken {
  workspaceId: string;
  userId: string;
  name: string;
  /** Null: every area. */
  scopes: readonly string[] | null;
  /** Null or 0: never expires. */
  ttlDays: number | null;
}

/** Mints a token; the secret in the answer is shown once and kept only as a hash. */
export async function createApiToken(
  db: Db,
  catalogue: AccessCatalogue,
  input: NewToken,
): Promise<{ token: ApiToken; secret: string }> {
  const name = input.name.trim();
  if (!name) throw refuse('token_name_required');
  checkText(name, 'name', TEXT_MAX.name);
  const scopes = validateScopes(input.scopes, catalogue);
  const expiresAt = expiryOf(input.ttlDays);
  const id = randomUUID();
  const minted = mintSecret(TOKEN_PREFIX, input.workspaceId, id);
  const [token] = await db
    .insert(apiTokens)
    .values({
      workspaceId: input.workspaceId,
      id,
      userId: input.userId,
      name,
      scopes,
      secretHash: minted.hash,
      expiresAt,
    })
    .returning();
  return { token: token as ApiToken, secret: minted.text };
}

/** The account's tokens, newest first; `withLegacy` adds those that predate scopes. */
export async function listApiTokens(
  db: Db,
  workspaceId: string,
  userId: string,
  options: { withLegacy?: boolean; limit: number },
): Promise<ApiToken[]> {
  return db
    .select()
    .from(apiTokens)
    .where(
      and(
        eq(apiTokens.workspaceId, workspaceId),
        eq(apiTokens.userId, userId),
        options.withLegacy ? undefined : isNotNull(apiTokens.scopes),
      ),
    )
    .orderBy(desc(apiTokens.createdAt), desc(apiTokens.id))
    .limit(options.limit);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * One page of the account's tokens, newest first, legacy ones included: `size + 1` rows
 * after the token `afterId` names, compared in SQL so timestamps keep their microseconds.
 */
export async function pageApiTokens(
  db: Db,
  owner: { workspaceId: string; userId: string },
  page: { size: number; afterId: string | null },
): Promise<ApiToken[]> {
  const mine = and(
    eq(apiTokens.workspaceId, owner.workspaceId),
    eq(apiTokens.userId, owner.userId),
  );
  let after;
  if (page.afterId !== null) {
    if (!uuidPattern.test(page.afterId)) throw refuse('cursor_malformed');
    after = sql`(${apiTokens.createdAt}, ${apiTokens.id}) < (
      select t.created_at, t.id from api_tokens t
      where t.workspace_id = ${owner.workspaceId} and t.user_id = ${owner.userId} and t.id = ${page.afterId})`;
  }
  return db
    .select()
    .from(apiTokens)
    .where(and(mine, after))
    .orderBy(desc(apiTokens.createdAt), desc(apiTokens.id))
    .limit(page.size + 1);
}

/**
 * Revokes one of the account's own tokens; another's id answers token_not_found. Streams
 * opened with the token end at commit, in every process.
 */
export async function revokeApiToken(
  db: Db,
  workspaceId: string,
  userId: string,
  id: string,
): Promise<ApiToken> {
  return db.transaction(async (tx) => {
    const [token] = await tx
      .update(apiTokens)
      .set({ revokedAt: sql`coalesce(${apiTokens.revokedAt}, now())` })
      .where(
        and(
          eq(apiTokens.workspaceId, workspaceId),
          eq(apiTokens.userId, userId),
          eq(apiTokens.id, id),
        ),
      )
      .returning();
    if (!token) throw refuse('token_not_found');
    await announceRevocation(tx, { workspaceId, tokenId: id });
    return token;
  });
}
