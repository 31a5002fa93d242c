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
 * Where a payload for `phoneNumberId` goes: the workspace that connected it, else (the
 * environment's SVC_CHAT_PHONE_NUMBER_ID) the deployment's sole workspace unless it
 * connected its own. Otherwise why not, in words an operator can act on: an unrouted
 * payload's items are dropped, and the log line says this.
 */
export async function routeOfNumber(
  db: Db,
  config: Config,
  phoneNumberId: string,
): Promise<{ workspaceId: string } | { unrouted: string }> {
  const [connected] = await db
    .select({ workspaceId: chatConnections.workspaceId })
    .from(chatConnections)
    .where(eq(chatConnections.phoneNumberId, phoneNumberId));
  if (connected) return { workspaceId: connected.workspaceId };
  if (config.chat.phoneNumberId !== phoneNumberId) {
    return {
      unrouted:
        'no workspace connected this number and it is not SVC_CHAT_PHONE_NUMBER_ID ' +
        `(${config.chat.phoneNumberId ? 'set to another number' : 'unset'})`,
    };
  }
  // The environment's number serves the sole workspace, unless it connected its own.
  const sole = await soleWorkspaceId(db);
  if (!sole) {
    return {
      unrouted:
        "SVC_CHAT_PHONE_NUMBER_ID serves a deployment's only workspace, and this one has " +
        'several: connect the number to one of them (chatConnect)',
    };
  }
  const [own] = await db
    .select({ id: chatConnections.id })
    .from(chatConnections)
    .where(eq(chatConnections.workspaceId, sole));
  if (own) {
    return {
      unrouted:
        'the only workspace connected a number of its own, which replaces SVC_CHAT_PHONE_NUMBER_ID',
    };
  }
  return { workspaceId: sole };
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
  const route = await routeOfNumber(db, config, phoneNumberId);
  return 'workspaceId' in route ? route.workspaceId : null;
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
