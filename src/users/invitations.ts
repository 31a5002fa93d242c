import { and, eq, isNull } from 'drizzle-orm';
import { hashPassword } from '../auth/passwords.js';
import { invitations } from '../auth/tables.js';
import { signedIn, type Actor, type Context } from '../context.js';
import { refuse } from '../errors.js';
import { workspaces } from '../workspaces/tables.js';
import { assertWithinReach, DEFAULT_ROLE, parseRole, selectUser } from './admin.js';
import { findLiveLink, followLink, issueLink, linkAddress, withMail, type Tx } from './links.js';
import { checkPassword, parseEmail, parseName } from './rules.js';
import { findUserByEmail } from './service.js';
import { users, type User } from './tables.js';

export interface InviteResult {
  user: User;
  /** The link, when no mail carried it: no SVC_SMTP_HOST, or the relay refused it. */
  activationLink: string | null;
}

/** The unique index on `(workspace_id, lower(email))` caught a concurrent invite. */
function isEmailTaken(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) {
    const { code, constraint_name } = e as { code?: string; constraint_name?: string };
    if (code === '23505' && constraint_name === 'users_workspace_email_key') return true;
  }
  return false;
}

async function insertInvitee(
  tx: Tx,
  workspaceId: string,
  input: { email: string; name: string; role: string | null },
): Promise<User> {
  try {
    const [user] = await tx
      .insert(users)
      .values({ workspaceId, ...input, passwordHash: null })
      .returning();
    return user as User;
  } catch (error) {
    if (isEmailTaken(error)) throw refuse('email_taken');
    throw error;
  }
}

/**
 * `invite`: creates a pending account (no password) holding `role` (`member` when left
 * out, `''` for none) and an invitation link living SVC_INVITE_TTL.
 */
export async function inviteUser(
  ctx: Context,
  input: { email: string; name: string; role?: string | null },
): Promise<InviteResult> {
  const { actor } = signedIn(ctx);
  const email = parseEmail(input.email);
  const name = parseName(input.name);
  const role = input.role == null ? DEFAULT_ROLE : parseRole(ctx.access, input.role);
  assertWithinReach(ctx.access, actor, role);
  if (await findUserByEmail(ctx.database.db, actor.workspaceId, email)) {
    throw refuse('email_taken');
  }
  const { user, secret } = await ctx.database.db.transaction(async (tx) => {
    const user = await insertInvitee(tx, actor.workspaceId, { email, name, role });
    const link = await issueLink(tx, 'invitation', user, ctx.config.invitations.inviteTtlMs);
    return { user, secret: link.secret };
  });
  return deliverInvitation(ctx, actor, user, secret);
}

/**
 * `resendInvite`: a new link for a pending account; its older links stop working.
 * An account that already chose a password answers `invitation_not_pending`.
 */
export async function resendInvite(ctx: Context, userId: string): Promise<InviteResult> {
  const { actor } = signedIn(ctx);
  const { user, secret } = await ctx.database.db.transaction(async (tx) => {
    const user = await selectUser(tx, actor.workspaceId, userId);
    if (!user) throw refuse('user_not_found');
    assertWithinReach(ctx.access, actor, user.role);
    if (user.passwordHash !== null) throw refuse('invitation_not_pending');
    await tx
      .delete(invitations)
      .where(
        and(
          eq(invitations.workspaceId, user.workspaceId),
          eq(invitations.userId, user.id),
          isNull(invitations.usedAt),
        ),
      );
    const link = await issueLink(tx, 'invitation', user, ctx.config.invitations.inviteTtlMs);
    return { user, secret: link.secret };
  });
  return deliverInvitation(ctx, actor, user, secret);
}

/**
 * Mails the link when SMTP is configured. Without SVC_SMTP_HOST, or when the relay
 * refuses the message, the link comes back for the inviter to pass on; the account and
 * its link stay either way (resendInvite makes a new one).
 */
async function deliverInvitation(
  ctx: Context,
  actor: Actor,
  user: User,
  secret: string,
): Promise<InviteResult> {
  const link = linkAddress(ctx, 'invitation', secret);
  try {
    const mailed = await withMail(ctx, async (mail) => {
      const [workspace, inviter] = await Promise.all([
        ctx.database.db.select().from(workspaces).where(eq(workspaces.id, user.workspaceId)),
        selectUser(ctx.database.db, actor.workspaceId, actor.userId),
      ]);
      await mail.sendInvite(user.email, {
        link,
        name: user.name,
        expiresInMs: ctx.config.invitations.inviteTtlMs,
        workspace: workspace[0]?.name ?? '',
        inviter: inviter?.name ?? '',
      });
    });
    return { user, activationLink: mailed ? null : link };
  } catch (error) {
    ctx.log.warn({ err: error, userId: user.id }, 'invitation not mailed; its link is returned');
    return { user, activationLink: link };
  }
}

/**
 * `acceptInvitation`: the invitee chooses a password (and may correct the name) and is
 * signed in. The link is spent; an unknown, used or expired one, or one whose account was
 * disabled or already activated, answers `link_invalid`.
 */
export async function acceptInvitation(
  ctx: Context,
  input: { token: string; password: string; name?: string | null },
): Promise<User> {
  const link = await findLiveLink(ctx.database.db, 'invitation', input.token);
  if (!link) throw refuse('link_invalid');
  const name = input.name == null ? null : parseName(input.name);
  const passwordHash = await hashPassword(checkPassword(input.password));
  return followLink(ctx, 'invitation', link, {
    passwordHash,
    ...(name === null ? {} : { name }),
  });
}
