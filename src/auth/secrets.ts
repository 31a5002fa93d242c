import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

function uuidBytes(uuid: string): Buffer {
  return Buffer.from(uuid.replaceAll('-', ''), 'hex');
}

function uuidText(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** 32 random bytes: 256 bits, as SPEC 2.9 asks of token secrets. */
const SECRET_BYTES = 32;
const ENCODED_BYTES = 16 + 16 + SECRET_BYTES;

export interface MintedSecret {
  /** What the holder keeps: shown once, never stored. */
  text: string;
  /** What the database keeps. */
  hash: Buffer;
}

export function hashSecret(secret: Uint8Array): Buffer {
  // The one-shot hash: a Hash object's setup cost more than hashing 32 bytes.
  return hash('sha256', secret, 'buffer');
}

/**
 * A credential naming its row: `prefix` + base64url(workspace id, row id, secret). The
 * ids make the lookup one primary-key read in the right workspace (a shard, past one
 * server); the secret is compared by its hash in constant time.
 */
export function mintSecret(prefix: string, workspaceId: string, id: string): MintedSecret {
  const secret = randomBytes(SECRET_BYTES);
  const payload = Buffer.concat([uuidBytes(workspaceId), uuidBytes(id), secret]);
  return { text: `${prefix}${payload.toString('base64url')}`, hash: hashSecret(secret) };
}

export interface ParsedSecret {
  workspaceId: string;
  id: string;
  secret: Buffer;
}

export function parseSecret(prefix: string, text: string): ParsedSecret | null {
  if (!text.startsWith(prefix)) return null;
  const encoded = text.slice(prefix.length);
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return null;
  const payload = Buffer.from(encoded, 'base64url');
  if (payload.length !== ENCODED_BYTES) return null;
  return {
    workspaceId: uuidText(payload.subarray(0, 16)),
    id: uuidText(payload.subarray(16, 32)),
    secret: payload.subarray(32),
  };
}

/** Constant-time: a stored hash against the hash of a presented secret. */
export function secretMatches(stored: Buffer, presented: Buffer): boolean {
  const hash = hashSecret(presented);
  return stored.length === hash.length && timingSafeEqual(stored, hash);
}
