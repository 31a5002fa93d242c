import { randomUUID } from 'node:crypto';
import { and, eq, gt, isNotNull, isNull, sql } from 'drizzle-orm';
import { parseSecret, mintSecret, secretMatches } from '../auth/secrets.js';
import { createSession, sessionCookie } from '../auth/sessions.js';
import { invitations, passwordResets } from '../auth/tables.js';
import type { Context } from '../context.js';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { createMailService, mailLink, type MailLinkPath, type MailService } from '../mail/index.js';
import { workspaces } from '../workspaces/tables.js';
import { users, type User } from './tables.js';

/** A transaction of `Db`, for helpers that run inside one. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Anything that runs a query: the pool or a transaction. */
export type Queryable = Db | Tx;

export type LinkKind = 'invitation' | 'reset';

// Both tables have the same columns (src/auth/tables.ts `linkTable`); one type serves both.
const tables: Record<LinkKind, typeof invitations> = {
  invitation: invitations,
  reset: passwordResets as unknown as typeof invitations,
};

/** Secrets name what they open, so an invitation never works as a reset and back. */
const prefixes: Record<LinkKind, string> = { invitation: 'i1_', reset: 'r1_' };

/** The frontend page that reads each kind of link from its fragment. */
export const linkPages: Record<LinkKind, MailLinkPath> = {
  invitation: '/invitation',
  reset: '/reset-password',
};

export interface IssuedLink {
  id: string;
  /** The one-time secret; shown or mailed once, stored only as a hash. */
  secret: string;
}

/** Stores a new one-time link for `user`, valid for `ttlMs`. */
export async function issueLink(
  q: Queryable,
  kind: LinkKind,
  user: Pick<User, 'workspaceId' | 'id'>,
  ttlMs: number,
): Promise<IssuedLink> {
  const id = randomUUID();
  const minted = mintSecret(prefixes[kind], user.workspaceId, id);
  await q.insert(tables[kind]).values({
    workspaceId: user.workspaceId,
    id,
    userId: user.id,
    secretHash: minted.hash,
    expiresAt: new Date(Date.now() + ttlMs),
  });
  return { id, secret: minted.text };
}

export interface LiveLink {
  workspaceId: string;
  id: string;
  userId: string;
}

/**
 * The link `token` names when it is unused, unexpired, its secret matches and its
 * workspace is active; null otherwise (all answer `link_invalid` alike).
 */
export async function findLiveLink(
  db: Db,
  kind: LinkKind,
  token: string,
): Promise<LiveLink | null> {
  const parsed = parseSecret(prefixes[kind], token.trim());
  if (!parsed) return null;
  const table = tables[kind];
  const [row] = await db
    .select({ id: table.id, userId: table.userId, secretHash: table.secretHash })
    .from(table)
    .innerJoin(workspaces, eq(workspaces.id, table.workspaceId))
    .where(
      and(
        eq(table.workspaceId, parsed.workspaceId),
        eq(table.id, parsed.id),
        isNull(table.usedAt),
        gt(table.expiresAt, sql`now()`),
        isNull(workspaces.deactivatedAt),
      ),
    );
  if (!row || !secretMatches(row.secretHash, parsed.secret)) return null;
  return { workspaceId: parsed.workspaceId, id: row.id, userId: row.userId };
}

/** Marks `link` used; false when another request used it first or it expired meanwhile. */
export async function spendLink(tx: Tx, kind: LinkKind, link: LiveLink): Promise<boolean> {
  const table = tables[kind];
  const spent = await tx
    .update(table)
    .set({ usedAt: sql`now()` })
    .where(
      and(
        eq(table.workspaceId, link.workspaceId),
        eq(table.id, link.id),
        isNull(table.usedAt),
        gt(table.expiresAt, sql`now()`),
      ),
    )
    .returning({ id: table.id });
  return spent.length === 1;
}

/**
 * Follows `link`: spends it and makes `changes` (a new password hash, perhaps a name) to
 * its account in one transaction, then signs the caller in. The account must be enabled
 * and, for an invitation, not yet activated or, for a reset, activated; else
 * `link_invalid`. `alsoInTx` runs in that transaction once the account is changed.
 */
export async function followLink(
  ctx: Context,
  kind: LinkKind,
  link: LiveLink,
  changes: { passwordHash: string; name?: string },
  alsoInTx: (tx: Tx, user: User) => Promise<void> = async () => {},
): Promise<User> {
  const user = await ctx.database.db.transaction(async (tx) => {
    if (!(await spendLink(tx, kind, link))) throw refuse('link_invalid');
    const [user] = await tx
      .update(users)
      .set(changes)
      .where(
        and(
          eq(users.workspaceId, link.workspaceId),
          eq(users.id, link.userId),
          kind === 'reset' ? isNotNull(users.passwordHash) : isNull(users.passwordHash),
          isNull(users.disabledAt),
        ),
      )
      .returning();
    if (!user) throw refuse('link_invalid');
    await alsoInTx(tx, user);
    return user;
  });
  await signIn(ctx, user);
  return user;
}

/** Every unused link of one kind the account holds stops working. */
export async function spendLinksOf(
  q: Queryable,
  kind: LinkKind,
  user: Pick<User, 'workspaceId' | 'id'>,
): Promise<void> {
  const table = tables[kind];
  await q
    .update(table)
    .set({ usedAt: sql`now()` })
    .where(
      and(eq(table.workspaceId, user.workspaceId), eq(table.userId, user.id), isNull(table.usedAt)),
    );
}

export async function deleteLink(
  q: Queryable,
  kind: LinkKind,
  link: { workspaceId: string; id: string },
): Promise<void> {
  const table = tables[kind];
  await q.delete(table).where(and(eq(table.workspaceId, link.workspaceId), eq(table.id, link.id)));
}

/** Unused, unexpired links of one kind the account holds. */
export async function countLiveLinks(
  q: Queryable,
  kind: LinkKind,
  user: Pick<User, 'workspaceId' | 'id'>,
): Promise<number> {
  const table = tables[kind];
  const [row] = await q
    .select({ count: sql<number>`count(*)::int` })
    .from(table)
    .where(
      and(
        eq(table.workspaceId, user.workspaceId),
        eq(table.userId, user.id),
        isNull(table.usedAt),
        gt(table.expiresAt, sql`now()`),
      ),
    );
  return row?.count ?? 0;
}

/**
 * The address of a link: under SVC_PUBLIC_URL with mail configured, else a path on this
 * origin (`/invitation#token=...`); without SVC_SMTP_HOST no public URL is known.
 */
export function linkAddress(ctx: Context, kind: LinkKind, secret: string): string {
  return mailLink(ctx.config.mail?.publicUrl ?? '', linkPages[kind], secret);
}

/**
 * Runs `send` with a mail service made for this one message (nothing is pooled), or
 * answers false without SVC_SMTP_HOST. Rejects when the relay does not take the message.
 */
export async function withMail(
  ctx: Context,
  send: (mail: MailService) => Promise<void>,
): Promise<boolean> {
  const mail = createMailService(ctx.config.mail, ctx.log);
  if (!mail) return false;
  try {
    await send(mail);
    return true;
  } finally {
    mail.close();
  }
}

/** Starts a browser session for `user` and sets its cookie on the answer. */
export async function signIn(ctx: Context, user: User): Promise<void> {
  const cookie = await createSession(ctx.database.db, user);
  ctx.responseCookies.push(sessionCookie(cookie));
}
