import { createHmac, randomBytes } from 'node:crypto';

/** The header SPEC 6 leaves unnamed: `sha256=<hex HMAC-SHA256 of the body>`. */
export const SIGNATURE_HEADER = 'X-Webhook-Signature';
const SECRET_PREFIX = 'whsec_';
/** Key bytes of a new secret: 192 bits, the Standard Webhooks minimum and Svix's size. */
const KEY_BYTES = 24;

/**
 * A new signing secret, shown once: a Standard Webhooks secret, `whsec_` and the standard
 * base64 of random key bytes (no padding at 24 bytes), so the `standardwebhooks` package
 * and Svix-style verifiers accept it as it is.
 */
export function createSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(KEY_BYTES).toString('base64')}`;
}

/**
 * `X-Webhook-Signature`: `sha256=<hex HMAC-SHA256 of body>`, keyed by the secret exactly as
 * shown (its UTF-8 text, prefix included), as before Standard Webhooks headers were added,
 * so receivers that verify it keep working.
 */
export function signBody(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * The Standard Webhooks key of a secret: the base64 after `whsec_`, decoded. Node's base64
 * decoder also reads the base64url secrets issued before (`-` and `_`), giving the key
 * bytes they were drawn from; docs/webhooks.md tells their holders how to rewrite them.
 */
export function standardKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Buffer.from(encoded, 'base64');
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-signature` is `v1,` and the base64
 * HMAC-SHA256 of `${id}.${timestamp}.${body}` keyed by `standardKey(secret)`. `id` stays
 * the same across retries (receivers drop duplicates by it); `timestamp` (Unix seconds)
 * is the attempt's own, so a receiver can refuse a replayed or stale request.
 */
export function standardHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: Buffer,
): Record<string, string> {
  const signature = createHmac('sha256', standardKey(secret))
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${signature}`,
  };
}
