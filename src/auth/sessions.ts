import { randomUUID } from 'node:crypto';
import { and, eq, lt } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { announceRevocation } from '../events/revocations.js';
import { mintSecret } from './secrets.js';
import { sessions } from './tables.js';

/** SPEC 5: sessions last 30 days. */
export const SESSION_DAYS = 30;
const SESSION_MS = SESSION_DAYS * 24 * 60 * 60 * 1000;
/** `__Host-` binds the cookie to this origin, HTTPS and path `/` (SPEC 5). */
export const SESSION_COOKIE = '__Host-svc_session';

export function sessionCookie(value: string): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${SESSION_MS / 1000}; HttpOnly; Secure; SameSite=Lax`;
}

export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax`;
}

/** Starts a session and answers the cookie value that names it. */
export async function createSession(
  db: Db,
  user: { workspaceId: string; id: string },
): Promise<string> {
  const id = randomUUID();
  const minted = mintSecret('', user.workspaceId, id);
  await db.insert(sessions).values({
    workspaceId: user.workspaceId,
    id,
    userId: user.id,
    secretHash: minted.hash,
    expiresAt: new Date(Date.now() + SESSION_MS),
  });
  return minted.text;
}

/** Ends one session (sign-out); streams opened with it end in every process at commit. */
export async function deleteSession(db: Db, workspaceId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .delete(sessions)
      .where(and(eq(sessions.workspaceId, workspaceId), eq(sessions.id, id)));
    await announceRevocation(tx, { workspaceId, sessionId: id });
  });
}

/**
 * Signs an account out everywhere (disabling it, resetting its password), in the caller's
 * transaction: its sessions go, and the streams they opened end at commit. Its tokens
 * are not touched.
 */
export async function revokeUserSessions(
  tx: Db,
  workspaceId: string,
  userId: string,
): Promise<void> {
  await tx
    .delete(sessions)
    .where(and(eq(sessions.workspaceId, workspaceId), eq(sessions.userId, userId)));
  await announceRevocation(tx, { workspaceId, userId, sessionsOnly: true });
}

export async function deleteExpiredSessions(db: Db): Promise<number> {
  const removed = await db
    .delete(sessions)
    .where(lt(sessions.expiresAt, new Date()))
    .returning({ id: sessions.id });
  return removed.length;
}

/** The session cookie's value in a Cookie header, if any. */
export function sessionFromCookie(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return null;
}
