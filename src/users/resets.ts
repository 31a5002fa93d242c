import { and, asc, eq, gt, isNotNull, isNull, sql } from 'drizzle-orm';
import { hashPassword } from '../auth/passwords.js';
import { takeAttempt, type Budget } from '../auth/rate-limit.js';
import { revokeUserSessions } from '../auth/sessions.js';
import { passwordResets } from '../auth/tables.js';
import type { Config } from '../config.js';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';
import { workspaces } from '../workspaces/tables.js';
import {
  countLiveLinks,
  deleteLink,
  findLiveLink,
  followLink,
  issueLink,
  linkAddress,
  spendLinksOf,
  withMail,
  type IssuedLink,
  type Tx,
} from './links.js';
import { checkPassword, parseEmail } from './rules.js';
import { users, type User } from './tables.js';

/** Second key space of the per-address advisory lock ("rset" in ASCII). */
const RESET_LOCK = 0x72736574;

function resetBudget(ctx: Context): Budget {
  const { resetAttempts, resetTtlMs } = ctx.config.invitations;
  return { bucket: 'reset', key: ctx.clientAddress, limit: resetAttempts, windowMs: resetTtlMs };
}

/**
 * The account a reset may reach: activated, enabled, in an active workspace (invitees,
 * disabled accounts and unknown addresses get nothing, and the same answer). The same
 * address may hold accounts in several workspaces: `workspaceId` names one, else the
 * oldest workspace's account is meant, as `login` picks.
 */
async function findResettable(
  ctx: Context,
  email: string,
  workspaceId: string | null,
): Promise<User | undefined> {
  const [row] = await ctx.database.db
    .select({ user: users })
    .from(users)
    .innerJoin(workspaces, eq(workspaces.id, users.workspaceId))
    .where(
      and(
        eq(sql`lower(${users.email})`, email.toLowerCase()),
        workspaceId ? eq(users.workspaceId, workspaceId) : undefined,
        isNotNull(users.passwordHash),
        isNull(users.disabledAt),
        isNull(workspaces.deactivatedAt),
      ),
    )
    .orderBy(asc(workspaces.createdAt))
    .limit(1);
  return row?.user;
}

/**
 * A new reset link for `user`, or null when the rules of SPEC 8.2 send none: a reset mail
 * went to the address (in any workspace) within SVC_RESET_COOLDOWN, or the account
 * already holds SVC_RESET_LINKS live links. Serialised per address, so concurrent
 * requests cannot both pass the checks.
 */
async function reserveResetLink(
  tx: Tx,
  rules: Config['invitations'],
  user: User,
): Promise<IssuedLink | null> {
  const address = user.email.toLowerCase();
  await tx.execute(sql`select pg_advisory_xact_lock(${RESET_LOCK}::int, hashtext(${address}))`);
  const [recent] = await tx
    .select({ id: passwordResets.id })
    .from(passwordResets)
    .innerJoin(
      users,
      and(eq(users.workspaceId, passwordResets.workspaceId), eq(users.id, passwordResets.userId)),
    )
    .where(
      and(
        eq(sql`lower(${users.email})`, address),
        gt(
          passwordResets.createdAt,
          sql`now() - make_interval(secs => ${rules.resetCooldownMs / 1000})`,
        ),
      ),
    )
    .limit(1);
  if (recent) return null;
  if ((await countLiveLinks(tx, 'reset', user)) >= rules.resetLinks) return null;
  return issueLink(tx, 'reset', user, rules.resetTtlMs);
}

/**
 * Sends the reset mail after the answer is decided, so a known address takes no longer
 * to answer than an unknown one. A link whose mail the relay refused is removed: it
 * reached nobody, so it neither counts against the cap nor holds the cooldown.
 */
async function mailResetLink(ctx: Context, user: User, link: IssuedLink): Promise<void> {
  try {
    await withMail(ctx, (mail) =>
      mail.sendReset(user.email, {
        link: linkAddress(ctx, 'reset', link.secret),
        name: user.name,
        expiresInMs: ctx.config.invitations.resetTtlMs,
      }),
    );
  } catch (error) {
    ctx.log.warn({ err: error, userId: user.id }, 'reset link not mailed; it was removed');
    await deleteLink(ctx.database.db, 'reset', { workspaceId: user.workspaceId, id: link.id });
  }
}

/**
 * `requestPasswordReset`: always true, whether or not the address names an account.
 * Over SVC_RESET_ATTEMPTS requests from one client address within SVC_RESET_TTL it
 * answers RATE_LIMITED. Without SVC_SMTP_HOST it sends nothing and creates no link.
 */
export async function requestPasswordReset(
  ctx: Context,
  input: { email: string; workspaceId?: string | null },
): Promise<true> {
  const email = parseEmail(input.email);
  // Every request spends one, answered or not: the budget counts requests, not failures.
  const attempt = await takeAttempt(ctx.database.db, resetBudget(ctx));
  if ('retryAfter' in attempt) {
    const { retryAfter } = attempt;
    throw refuse('rate_limited', { retryAfter }, { extensions: { retryAfter } });
  }
  if (ctx.config.mail === null) return true;
  const user = await findResettable(ctx, email, input.workspaceId ?? null);
  if (!user) return true;
  const rules = ctx.config.invitations;
  const link = await ctx.database.db.transaction((tx) => reserveResetLink(tx, rules, user));
  if (link) {
    mailResetLink(ctx, user, link).catch((error: unknown) =>
      ctx.log.error({ err: error }, 'reset link cleanup failed'),
    );
  }
  return true;
}

/**
 * `resetPassword`: sets the new password, spends every reset link of the account, ends
 * all its sessions (and the streams they opened) and signs this caller in with a fresh
 * one. API tokens and their streams stay.
 */
export async function resetPassword(
  ctx: Context,
  input: { token: string; password: string },
): Promise<User> {
  const link = await findLiveLink(ctx.database.db, 'reset', input.token);
  if (!link) throw refuse('link_invalid');
  const passwordHash = await hashPassword(checkPassword(input.password));
  return followLink(ctx, 'reset', link, { passwordHash }, async (tx, user) => {
    await spendLinksOf(tx, 'reset', user);
    await revokeUserSessions(tx, user.workspaceId, user.id);
  });
}
