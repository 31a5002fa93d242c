import { and, asc, eq, sql } from 'drizzle-orm';
import { hashPassword } from '../auth/passwords.js';
import { signedIn, type Context } from '../context.js';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { users, type User } from './tables.js';
import { decodeCursor, encodeCursor, pageSize, toPage, type Page } from '../paging/index.js';

export async function findUser(db: Db, workspaceId: string, id: string): Promise<User | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.workspaceId, workspaceId), eq(users.id, id)));
  return row;
}

/** Whether the workspace holds an account of this id (other domains check links with it). */
export async function userExists(db: Db, workspaceId: string, id: string): Promise<boolean> {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.workspaceId, workspaceId), eq(users.id, id)));
  return row !== undefined;
}

export async function getUser(ctx: Context, id: string): Promise<User> {
  const user = await findUser(ctx.database.db, signedIn(ctx).workspaceId, id);
  if (!user) throw refuse('user_not_found');
  return user;
}

export async function findUserByEmail(
  db: Db,
  workspaceId: string,
  email: string,
): Promise<User | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(
      and(eq(users.workspaceId, workspaceId), eq(sql`lower(${users.email})`, email.toLowerCase())),
    )
    .limit(1);
  return row;
}

/** Accounts by name, then id (stable across pages). */
export async function listUsers(
  ctx: Context,
  args: { first?: number | null; after?: string | null },
): Promise<Page<User>> {
  const size = pageSize(args.first, ctx.config);
  const { workspaceId } = signedIn(ctx);
  const lowerName = sql<string>`lower(${users.name})`;
  let after;
  if (args.after) {
    const [name, id] = decodeCursor('users', args.after, 2) as [string, string];
    after = sql`(${lowerName}, ${users.id}) > (${name}, ${id})`;
  }
  const rows = await ctx.database.db
    .select()
    .from(users)
    .where(and(eq(users.workspaceId, workspaceId), after))
    .orderBy(asc(lowerName), asc(users.id))
    .limit(size + 1);
  return toPage(rows, size, (user) => encodeCursor('users', [user.name.toLowerCase(), user.id]));
}

/** Creates an account with a password already checked by the caller's rules. */
export async function createAccount(
  db: Db,
  workspaceId: string,
  input: { email: string; name: string; password: string | null; role: string | null },
): Promise<User> {
  const [row] = await db
    .insert(users)
    .values({
      workspaceId,
      email: input.email,
      name: input.name,
      role: input.role,
      passwordHash: input.password === null ? null : await hashPassword(input.password),
    })
    .returning();
  return row as User;
}
