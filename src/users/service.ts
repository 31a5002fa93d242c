import { and, eq, sql } from 'drizzle-orm';
import { hashPassword } from '../auth/passwords.js';
import type { Db } from '../db/client.js';
import { users, type User } from './tables.js';

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

/** Creates an account with a password already checked by the caller's rules. */
export async function createAccount(
  db: Db,
  workspaceId: string,
  input: { email: string; name: string; password: string; role: string | null },
): Promise<User> {
  const [row] = await db
    .insert(users)
    .values({
      workspaceId,
      email: input.email,
      name: input.name,
      role: input.role,
      passwordHash: await hashPassword(input.password),
    })
    .returning();
  return row as User;
}
