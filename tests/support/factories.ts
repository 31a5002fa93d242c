import { randomBytes } from 'node:crypto';
import { eq, and } from 'drizzle-orm';
import { buildCatalogue, type AccessCatalogue } from '../../src/auth/access.js';
import { createSession, SESSION_COOKIE } from '../../src/auth/sessions.js';
import { createApiToken } from '../../src/auth/tokens.js';
import type { Db } from '../../src/db/client.js';
import { createAccount } from '../../src/users/service.js';
import { users, type User } from '../../src/users/tables.js';
import { createWorkspace as insertWorkspace } from '../../src/workspaces/service.js';
import type { Workspace } from '../../src/workspaces/tables.js';

export const PASSWORD = 'correct horse battery staple';
const coreCatalogue = buildCatalogue([]);

function unique(): string {
  return randomBytes(4).toString('hex');
}

export function createWorkspace(db: Db, name = `Workspace ${unique()}`): Promise<Workspace> {
  return insertWorkspace(db, { name });
}

export interface UserOverrides {
  email?: string;
  name?: string;
  /** null: an account with no role. @default 'member' */
  role?: string | null;
  /** null: invited, not yet activated. @default PASSWORD */
  password?: string | null;
  disabled?: boolean;
}

export async function createUser(
  db: Db,
  workspace: { id: string },
  overrides: UserOverrides = {},
): Promise<User> {
  const user = await createAccount(db, workspace.id, {
    email: overrides.email ?? `user-${unique()}@example.com`,
    name: overrides.name ?? `User ${unique()}`,
    role: overrides.role === undefined ? 'member' : overrides.role,
    password: overrides.password === undefined ? PASSWORD : overrides.password,
  });
  if (!overrides.disabled) return user;
  const [disabled] = await db
    .update(users)
    .set({ disabledAt: new Date() })
    .where(and(eq(users.workspaceId, user.workspaceId), eq(users.id, user.id)))
    .returning();
  return disabled as User;
}

export interface TokenOptions {
  scopes?: string[] | null;
  ttlDays?: number | null;
  name?: string;
  catalogue?: AccessCatalogue;
}

/** A bearer token's secret for `user`; scopes null holds every area. */
export async function tokenFor(db: Db, user: User, options: TokenOptions = {}): Promise<string> {
  const { secret } = await createApiToken(db, options.catalogue ?? coreCatalogue, {
    workspaceId: user.workspaceId,
    userId: user.id,
    name: options.name ?? `token ${unique()}`,
    scopes: options.scopes ?? null,
    ttlDays: options.ttlDays ?? null,
  });
  return secret;
}

/** A Cookie header signing `user` in. */
export async function sessionCookieFor(db: Db, user: User): Promise<string> {
  return `${SESSION_COOKIE}=${await createSession(db, user)}`;
}

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/** Headers signing a request in as `user` by a new token of theirs. */
export async function bearerFor(
  db: Db,
  user: User,
  options: TokenOptions = {},
): Promise<{ authorization: string }> {
  return bearer(await tokenFor(db, user, options));
}

/** Headers signing a request in as `user` by a new browser session of theirs. */
export async function sessionFor(db: Db, user: User): Promise<{ cookie: string }> {
  return { cookie: await sessionCookieFor(db, user) };
}

/** A new account of `workspace` and headers signing in as it by a new token. */
export async function createTokenUser(
  db: Db,
  workspace: { id: string },
  overrides: UserOverrides = {},
  token: TokenOptions = {},
): Promise<{ user: User; headers: { authorization: string } }> {
  const user = await createUser(db, workspace, overrides);
  return { user, headers: await bearerFor(db, user, token) };
}

/** A new account of `workspace` and the Cookie header of a new session of it. */
export async function createSessionUser(
  db: Db,
  workspace: { id: string },
  overrides: UserOverrides = {},
): Promise<{ user: User; cookie: string }> {
  const user = await createUser(db, workspace, overrides);
  return { user, cookie: await sessionCookieFor(db, user) };
}
