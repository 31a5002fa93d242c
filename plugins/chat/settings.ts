// Where a workspace's chat runs: its own connection (a number and a sealed access token),
// or, for a deployment with one workspace, the number and token of the environment.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { refuse, soleWorkspaceId, type Config, type Db } from '../../src/plugin-sdk/index.js';
import { chatConnections } from './tables.js';

/** A number the service may send from and the token it sends with. */
export interface ChatLine {
  workspaceId: string;
  phoneNumberId: string;
  accessToken: string;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM with a fresh nonce each time: nonce ‖ ciphertext ‖ tag. */
export function seal(key: Buffer, secret: string): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

/** The sealed secret, or null when the key does not open it (rotated, or tampered with). */
export function unseal(key: Buffer, sealed: Buffer): string | null {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

/** A platform's phone number id: digits (it becomes a path segment of the platform's API). */
const NUMBER_ID = /^\d{1,64}$/;

/** Stores (or replaces) a workspace's connection; refused while no key can seal the token. */
export async function connectWorkspace(
  db: Db,
  config: Config,
  input: { workspaceId: string; phoneNumberId: string; accessToken: string },
): Promise<void> {
  const phoneNumberId = input.phoneNumberId.trim();
  const accessToken = input.accessToken.trim();
  if (!NUMBER_ID.test(phoneNumberId)) throw refuse('chat_number_invalid');
  if (!accessToken) throw refuse('chat_token_required');
  const key = config.chat.credentialsKey;
  if (!key) throw refuse('chat_credentials_key_unset');
  const accessTokenSealed = seal(key, accessToken);
  await db.transaction(async (tx) => {
    // Two workspaces connecting one number at once: the second waits, then finds it taken.
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`chat-number:${phoneNumberId}`}, 0))`,
    );
    const [holder] = await tx
      .select({ workspaceId: chatConnections.workspaceId })
      .from(chatConnections)
      .where(eq(chatConnections.phoneNumberId, phoneNumberId));
    if (holder && holder.workspaceId !== input.workspaceId) throw refuse('chat_number_taken');
    await tx
      .insert(chatConnections)
      .values({ workspaceId: input.workspaceId, phoneNumberId, accessTokenSealed })
      .onConflictDoUpdate({
        target: chatConnections.workspaceId,
        set: { phoneNumberId, accessTokenSealed, createdAt: sql`now()` },
      });
  });
}

/** Removes a workspace's connection: inbound payloads for its number are no longer taken. */
export async function disconnectWorkspace(db: Db, workspaceId: string): Promise<boolean> {
  const gone = await db
    .delete(chatConnections)
    .where(eq(chatConnections.workspaceId, workspaceId))
    .returning({ id: chatConnections.id });
  return gone.length > 0;
}

/**
 * The workspace an inbound payload's number belongs to: its connection's, else, when the
 * environment names that number, the deployment's only workspace. Null: not ours.
 */
export async function workspaceOfNumber(
  db: Db,
  config: Config,
  phoneNumberId: string,
): Promise<string | null> {
  const [connected] = await db
    .select({ workspaceId: chatConnections.workspaceId })
    .from(chatConnections)
    .where(eq(chatConnections.phoneNumberId, phoneNumberId));
  if (connected) return connected.workspaceId;
  if (config.chat.phoneNumberId !== phoneNumberId) return null;
  // The environment's number serves the sole workspace, unless it connected its own.
  const sole = await soleWorkspaceId(db);
  if (!sole) return null;
  const [own] = await db
    .select({ id: chatConnections.id })
    .from(chatConnections)
    .where(eq(chatConnections.workspaceId, sole));
  return own ? null : sole;
}

/** The line a workspace replies on: its connection's, else the environment's (one workspace). */
export async function lineOf(
  db: Db,
  config: Config,
  workspaceId: string,
): Promise<ChatLine | null> {
  const [connection] = await db
    .select()
    .from(chatConnections)
    .where(eq(chatConnections.workspaceId, workspaceId));
  if (connection) {
    const key = config.chat.credentialsKey;
    const accessToken = key ? unseal(key, connection.accessTokenSealed) : null;
    return accessToken
      ? { workspaceId, phoneNumberId: connection.phoneNumberId, accessToken }
      : null;
  }
  const { phoneNumberId, accessToken } = config.chat;
  if (!phoneNumberId || !accessToken) return null;
  return (await soleWorkspaceId(db)) === workspaceId
    ? { workspaceId, phoneNumberId, accessToken }
    : null;
}
