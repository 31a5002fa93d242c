import { and, eq, isNotNull, isNull, sql } from 'drizzle-orm';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';
import { users, type User } from '../users/tables.js';
import { workspaces } from '../workspaces/tables.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { refundAttempt, takeAttempt, type Budget } from './rate-limit.js';
import { clearedSessionCookie, createSession, deleteSession, sessionCookie } from './sessions.js';

/** SPEC 5: 10 failed attempts per client address per minute; no per-account lockout. */
export const LOGIN_FAILURES = { limit: 10, windowMs: 60_000 } as const;
/** Accounts one address may hold across workspaces that a sign-in tries. */
const MAX_CANDIDATES = 10;

// Verified when no account matches, so an unknown address costs what a known one does.
const decoy = hashPassword('decoy password that never matches');

function loginBudget(ctx: Context): Budget {
  return { bucket: 'login', key: ctx.clientAddress, ...LOGIN_FAILURES };
}

async function candidates(
  ctx: Context,
  email: string,
  workspaceId: string | null,
): Promise<User[]> {
  return ctx.database.db
    .select({ user: users })
    .from(users)
    .innerJoin(workspaces, eq(workspaces.id, users.workspaceId))
    .where(
      and(
        eq(sql`lower(${users.email})`, email.trim().toLowerCase()),
        isNotNull(users.passwordHash),
        isNull(users.disabledAt),
        isNull(workspaces.deactivatedAt),
        workspaceId ? eq(users.workspaceId, workspaceId) : undefined,
      ),
    )
    .orderBy(workspaces.createdAt)
    .limit(MAX_CANDIDATES)
    .then((rows) => rows.map((row) => row.user));
}

/** The first candidate whose password matches; always runs at least one verification. */
async function verifyCandidates(
  ctx: Context,
  input: { email: string; password: string; workspaceId?: string | null },
): Promise<User | undefined> {
  const found = await candidates(ctx, input.email, input.workspaceId ?? null);
  for (const user of found) {
    if (await verifyPassword(user.passwordHash as string, input.password)) return user;
  }
  if (found.length === 0) await verifyPassword(await decoy, input.password);
  return undefined;
}

/**
 * Signs in and sets the session cookie. The same address may hold accounts in several
 * workspaces: the first (oldest workspace) whose password matches wins unless
 * `workspaceId` names one. Every check holds one attempt of the address's budget while
 * it runs; a failure keeps it, a success gives it back (SPEC 5).
 */
export async function login(
  ctx: Context,
  input: { email: string; password: string; workspaceId?: string | null },
): Promise<User> {
  const db = ctx.database.db;
  const attempt = await takeAttempt(db, loginBudget(ctx));
  if ('retryAfter' in attempt) {
    const { retryAfter } = attempt;
    throw refuse('rate_limited', { retryAfter }, { extensions: { retryAfter } });
  }
  const user = await verifyCandidates(ctx, input);
  if (!user) throw refuse('credentials_invalid');
  await refundAttempt(db, attempt.attemptId);
  const cookie = await createSession(db, user);
  ctx.responseCookies.push(sessionCookie(cookie));
  return user;
}

/** Ends the caller's browser session; a token has none to end. */
export async function logout(ctx: Context): Promise<boolean> {
  const actor = ctx.actor;
  if (!actor?.sessionId) throw refuse('session_required');
  await deleteSession(ctx.database.db, actor.workspaceId, actor.sessionId);
  ctx.responseCookies.push(clearedSessionCookie());
  return true;
}
