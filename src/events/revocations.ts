import { sql } from 'drizzle-orm';
import type { Actor } from '../context.js';
import type { Db } from '../db/client.js';
import { payloadObject } from './payload.js';

/** The NOTIFY channel on which credentials that stopped working are announced. */
export const REVOCATIONS_CHANNEL = 'svc_revocations';

/**
 * Credentials that stopped working, so the streams opened with them end (docs/events.md).
 * Every field given must match a stream's credential; `workspaceId` alone names every
 * credential of the workspace.
 */
export interface Revocation {
  workspaceId: string;
  /** The account whose credentials ended (disabled, role changed, password reset). */
  userId?: string;
  tokenId?: string;
  sessionId?: string;
  /** Only sessions ended (a password reset signs the account out; its tokens stay). */
  sessionsOnly?: boolean;
}

type AnnouncementWatcher = (revocation: Revocation, payload: string) => void;

/** Told of every announcement this process makes, before its transaction commits. */
const watchers = new Set<AnnouncementWatcher>();

/**
 * Watches this process's own announcements (src/auth/credential-cache.ts): its notice
 * reaches this process only after the commit has answered. Answers the function that
 * stops watching.
 */
export function watchAnnouncements(watcher: AnnouncementWatcher): () => void {
  watchers.add(watcher);
  return () => void watchers.delete(watcher);
}

/**
 * Announces `revocation` in the caller's transaction (`q` is the transaction): PostgreSQL
 * delivers it to every listening process at commit, and a rolled-back change announces
 * nothing.
 */
export async function announceRevocation(
  q: Pick<Db, 'execute'>,
  revocation: Revocation,
): Promise<void> {
  const payload = JSON.stringify(revocation);
  for (const watcher of watchers) watcher(revocation, payload);
  await q.execute(sql`select pg_notify(${REVOCATIONS_CHANNEL}, ${payload})`);
}

function optionalString(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : null;
}

/** Reads a NOTIFY payload; null when it is not one of ours. */
export function parseRevocation(payload: string): Revocation | null {
  const v = payloadObject(payload);
  if (!v) return null;
  const ids = [v.userId, v.tokenId, v.sessionId].map(optionalString);
  if (typeof v.workspaceId !== 'string' || ids.includes(null)) return null;
  const [userId, tokenId, sessionId] = ids as (string | undefined)[];
  return {
    workspaceId: v.workspaceId,
    ...(userId !== undefined ? { userId } : {}),
    ...(tokenId !== undefined ? { tokenId } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(v.sessionsOnly === true ? { sessionsOnly: true } : {}),
  };
}

/** Whether `revocation` ends the credential `actor` presented. */
export function revokes(revocation: Revocation, actor: Actor): boolean {
  if (revocation.workspaceId !== actor.workspaceId) return false;
  if (revocation.userId !== undefined && revocation.userId !== actor.userId) return false;
  if (revocation.tokenId !== undefined && revocation.tokenId !== actor.token?.id) return false;
  if (revocation.sessionId !== undefined && revocation.sessionId !== actor.sessionId) return false;
  if (revocation.sessionsOnly && actor.sessionId === null) return false;
  return true;
}
