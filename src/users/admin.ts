import { and, eq, inArray, isNotNull, isNull, ne, sql } from 'drizzle-orm';
import { capabilitiesOf, type AccessCatalogue } from '../auth/access.js';
import { revokeUserSessions } from '../auth/sessions.js';
import { signedIn, type Actor, type Context } from '../context.js';
import { refuse } from '../errors.js';
import { announceRevocation } from '../events/revocations.js';
import type { Queryable, Tx } from './links.js';
import { users, type NewUser, type User } from './tables.js';

/** The capability that lets an account manage the others (SPEC 5). */
export const MANAGE_USERS = 'manage_users';
/** `invite` without a role (SPEC 2.2). */
export const DEFAULT_ROLE = 'member';
/** First key of the per-workspace advisory lock ("user" in ASCII). */
const USERS_LOCK = 0x75736572;

/**
 * Serialises, per workspace, the writes that could leave no account able to manage
 * users: held until the transaction ends, so the check and the write see one state.
 */
export async function lockWorkspaceUsers(tx: Tx, workspaceId: string): Promise<void> {
  await tx.execute(
    sql`select pg_advisory_xact_lock(${USERS_LOCK}::int, hashtext(${workspaceId}::text))`,
  );
}

export async function selectUser(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<User | undefined> {
  const [row] = await q
    .select()
    .from(users)
    .where(and(eq(users.workspaceId, workspaceId), eq(users.id, id)));
  return row;
}

/** `''` names no role; any other name must be a role the deployment declares. */
export function parseRole(catalogue: AccessCatalogue, role: string): string | null {
  if (role === '') return null;
  if (!catalogue.roles.has(role)) throw refuse('role_unknown', { role });
  return role;
}

/**
 * SPEC 5: a caller writes only roles whose capabilities it already holds, and touches only
 * accounts whose current role it holds that way.
 */
export function assertWithinReach(
  catalogue: AccessCatalogue,
  actor: Actor,
  role: string | null,
): void {
  for (const capability of capabilitiesOf(catalogue, role)) {
    if (!actor.capabilities.has(capability)) throw refuse('role_beyond_reach');
  }
}

/**
 * Whether an account counts as able to manage users: enabled, activated (an invitee
 * nobody can sign in as yet does not count) and holding the capability through its role.
 */
function managesUsers(
  catalogue: AccessCatalogue,
  user: Pick<User, 'role' | 'disabledAt' | 'passwordHash'>,
): boolean {
  return (
    user.disabledAt === null &&
    user.passwordHash !== null &&
    capabilitiesOf(catalogue, user.role).has(MANAGE_USERS)
  );
}

/** Refuses a write that turns `before` into `after` when no other account manages users. */
async function assertManagersRemain(
  tx: Tx,
  catalogue: AccessCatalogue,
  before: User,
  after: User,
): Promise<void> {
  if (!managesUsers(catalogue, before) || managesUsers(catalogue, after)) return;
  const roles = [...catalogue.roles]
    .filter(([, capabilities]) => capabilities.has(MANAGE_USERS))
    .map(([name]) => name);
  const [row] = await tx
    .select({ count: sql<number>`count(*)::int` })
    .from(users)
    .where(
      and(
        eq(users.workspaceId, before.workspaceId),
        ne(users.id, before.id),
        isNull(users.disabledAt),
        isNotNull(users.passwordHash),
        inArray(users.role, roles),
      ),
    );
  if ((row?.count ?? 0) === 0) throw refuse('last_privileged_refused');
}

interface AccountWrite {
  /** Refusals that depend on the stored account (self, reach of the new role). */
  check(target: User, actor: Actor): void;
  /** The columns to set, given the stored account. */
  set(target: User): Partial<NewUser>;
  /** More work in the same transaction once the row is written. */
  after?(tx: Tx, user: User): Promise<void>;
}

/**
 * One account write under the workspace lock: the account must exist in the caller's
 * workspace (another workspace's id answers the same `user_not_found`), be within the
 * caller's reach, and the write must leave an account able to manage users.
 */
async function writeAccount(ctx: Context, userId: string, write: AccountWrite): Promise<User> {
  const { actor } = signedIn(ctx);
  return ctx.database.db.transaction(async (tx) => {
    await lockWorkspaceUsers(tx, actor.workspaceId);
    const target = await selectUser(tx, actor.workspaceId, userId);
    if (!target) throw refuse('user_not_found');
    write.check(target, actor);
    assertWithinReach(ctx.access, actor, target.role);
    const changes = write.set(target);
    await assertManagersRemain(tx, ctx.access, target, { ...target, ...changes } as User);
    const [user] = await tx
      .update(users)
      .set(changes)
      .where(and(eq(users.workspaceId, target.workspaceId), eq(users.id, target.id)))
      .returning();
    await write.after?.(tx, user as User);
    return user as User;
  });
}

/**
 * `setUserRole`: `role` is a declared role name, or `''` for no role. The account's open
 * streams end at commit: each holds the role it was opened with, and reopens with the new.
 */
export function setUserRole(ctx: Context, input: { userId: string; role: string }): Promise<User> {
  const role = parseRole(ctx.access, input.role);
  return writeAccount(ctx, input.userId, {
    check(target, actor) {
      if (target.id === actor.userId) throw refuse('self_role_refused');
      assertWithinReach(ctx.access, actor, role);
    },
    set: () => ({ role }),
    async after(tx, user) {
      await announceRevocation(tx, { workspaceId: user.workspaceId, userId: user.id });
    },
  });
}

/**
 * `setUserDisabled`: disabling deletes every session of the account in the same
 * transaction; its tokens stop by themselves (credentials read `disabled_at`), and every
 * stream the account has open ends at commit, in every process.
 * Enabling one's own account is a no-op, since a disabled account cannot ask.
 */
export function setUserDisabled(
  ctx: Context,
  input: { userId: string; disabled: boolean },
): Promise<User> {
  return writeAccount(ctx, input.userId, {
    check(target, actor) {
      if (input.disabled && target.id === actor.userId) throw refuse('self_disable_refused');
    },
    set: (target) => ({ disabledAt: input.disabled ? (target.disabledAt ?? new Date()) : null }),
    async after(tx, user) {
      if (!input.disabled) return;
      await revokeUserSessions(tx, user.workspaceId, user.id);
      // Its tokens' streams end too; the tokens themselves stop at their next request.
      await announceRevocation(tx, { workspaceId: user.workspaceId, userId: user.id });
    },
  });
}
