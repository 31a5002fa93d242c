// Operations and checks the account-management tests share.
import { expect } from '@jest/globals';
import path from 'node:path';
import { and, eq, sql } from 'drizzle-orm';
import { invitations, passwordResets, sessions } from '../../src/auth/tables.js';
import type { Env } from '../../src/config.js';
import type { Db } from '../../src/db/client.js';
import { users, type User } from '../../src/users/tables.js';
import { createTestCert, mailEnv, startTestSmtp, type TestSmtp } from '../mail/test-smtp.js';
import { repoRoot } from '../support/env.js';
import { startServiceWithDb, type GraphBody, type TestService } from '../support/service.js';

/** A plugin declaring `user_manager` (manage_users alone) and `rota_keeper`. */
export const staffPluginsDir = path.join(repoRoot, 'tests/users/fixtures/plugins');

export const INVITE = `mutation ($email: String!, $name: String!, $role: String) {
  invite(email: $email, name: $name, role: $role) {
    user { id email name role capabilities pending disabled } activationLink } }`;
export const RESEND = `mutation ($id: UUID!) {
  resendInvite(userId: $id) { user { id pending } activationLink } }`;
export const SET_ROLE = `mutation ($id: UUID!, $role: String!) {
  setUserRole(userId: $id, role: $role) { id role capabilities } }`;
export const SET_DISABLED = `mutation ($id: UUID!, $disabled: Boolean!) {
  setUserDisabled(userId: $id, disabled: $disabled) { id disabled } }`;
// Anonymous queries stay under SVC_GRAPH_ANONYMOUS_MAX_TOKENS: short names.
export const ACCEPT =
  'mutation($t:String!,$p:String!,$n:String){acceptInvitation(token:$t,password:$p,name:$n){me{id email name role}}}';
export const REQUEST_RESET =
  'mutation($e:String!,$w:UUID){requestPasswordReset(email:$e,workspaceId:$w)}';
export const RESET = 'mutation($t:String!,$p:String!){resetPassword(token:$t,password:$p){me{id}}}';
export const LOGIN = 'mutation($e:String!,$p:String!){login(email:$e,password:$p){me{id}}}';
export const ME = '{ me { id email name role } }';

/** The password a test chooses when it follows an invitation or reset link. */
export const NEW_PASSWORD = 'a brand new passphrase';
/** How a used, unknown or expired invitation or reset link is refused. */
export const linkInvalid = {
  code: 'VALIDATION',
  reason: 'link_invalid',
  message: 'that link is unknown, used or expired',
};

/** Asserts a refusal in SPEC 7.1's shape: data null, then code, reason, meta, message. */
export function expectRefusal(
  body: GraphBody,
  expected: { code: string; reason: string; message: string; meta?: Record<string, unknown> },
): void {
  expect(body.data).toBeNull();
  expect(body.errors).toHaveLength(1);
  expect(body.errors?.[0]?.message).toBe(expected.message);
  expect(body.errors?.[0]?.extensions).toEqual(
    expect.objectContaining({
      code: expected.code,
      reason: expected.reason,
      meta: expected.meta ?? {},
    }),
  );
}

export async function storedUser(db: Db, user: Pick<User, 'workspaceId' | 'id'>) {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.workspaceId, user.workspaceId), eq(users.id, user.id)));
  return row;
}

export async function usersWithEmail(db: Db, email: string): Promise<User[]> {
  return db
    .select()
    .from(users)
    .where(eq(sql`lower(${users.email})`, email.toLowerCase()));
}

export async function sessionCount(db: Db, user: Pick<User, 'workspaceId' | 'id'>) {
  const rows = await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.workspaceId, user.workspaceId), eq(sessions.userId, user.id)));
  return rows.length;
}

export async function resetLinksOf(db: Db, user: Pick<User, 'workspaceId' | 'id'>) {
  return db
    .select()
    .from(passwordResets)
    .where(
      and(eq(passwordResets.workspaceId, user.workspaceId), eq(passwordResets.userId, user.id)),
    );
}

export async function invitationsOf(db: Db, user: Pick<User, 'workspaceId' | 'id'>) {
  return db
    .select()
    .from(invitations)
    .where(and(eq(invitations.workspaceId, user.workspaceId), eq(invitations.userId, user.id)));
}

/** The `name=value` pair of the session cookie an answer set. */
export function cookieFrom(headers: Headers): string {
  const cookie = headers.get('set-cookie');
  expect(cookie).toMatch(/^__Host-svc_session=/);
  return (cookie as string).split(';')[0] as string;
}

/** The token in a link's fragment (`...#token=<token>`). */
export function tokenOf(link: string): string {
  const match = /#token=([^\s]+)$/.exec(link);
  expect(match).not.toBeNull();
  return decodeURIComponent(match?.[1] ?? '');
}

/** A test service mailing through a test SMTP server of its own, with `env` on top. */
export async function startMailingService(
  env: Env,
): Promise<{ svc: TestService; smtp: TestSmtp; db: Db }> {
  const smtp = await startTestSmtp({ cert: createTestCert() });
  return { smtp, ...(await startServiceWithDb({ env: { ...mailEnv(smtp), ...env } })) };
}
