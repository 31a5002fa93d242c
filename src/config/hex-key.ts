import { accept, refuse, type Parsed } from './parsed.js';

const HEX = /^[0-9a-fA-F]*$/;

/**
 * SVC_CHAT_CREDENTIALS_KEY: 32 bytes as 64 hex characters (SPEC 8.2). The message gives
 * the length but never the value: it is a secret.
 */
export function parseHexKey(text: string, bytes = 32): Parsed<Buffer> {
  if (!HEX.test(text)) return refuse(`must be ${bytes * 2} hex characters (0-9, a-f)`);
  if (text.length !== bytes * 2) {
    return refuse(`must be ${bytes * 2} hex characters (${bytes} bytes), not ${text.length}`);
  }
  return accept(Buffer.from(text, 'hex'));
}
