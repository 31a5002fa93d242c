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

/** A bearer token's secret for `user`; scopes null holds every area. */
export async function tokenFor(
  db: Db,
  user: User,
  options: {
    scopes?: string[] | null;
    ttlDays?: number | null;
    name?: string;
    catalogue?: AccessCatalogue;
  } = {},
): Promise<string> {
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
