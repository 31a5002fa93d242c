// The platform's webhook pair (SPEC 4.3): the GET handshake and the signed POST. Neither
// answers with a body, and the signature check never falls open.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { PluginRoute } from '../../src/plugin-sdk/index.js';
import { changesOf, storePayload } from './inbound.js';
import { wakeMediaWorker } from './media.js';

const answer = (status: number) => new Response(null, { status });

/** Equal strings, compared in constant time (lengths are not secret). */
function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** `sha256=<64 hex>` over the raw body with the app secret; anything else is refused. */
export function signatureValid(
  appSecret: string | null,
  header: string | null,
  body: Uint8Array,
): boolean {
  if (!appSecret || !header) return false;
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!match) return false;
  const expected = createHmac('sha256', appSecret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(match[1]!, 'hex'));
}

export const webhookRoutes: PluginRoute[] = [
  {
    method: 'GET',
    path: 'webhook',
    public: true,
    handler: (request, ctx) => {
      const query = new URL(request.url).searchParams;
      const expected = ctx.config.chat.verifyToken;
      const given = query.get('hub.verify_token');
      const challenge = query.get('hub.challenge');
      if (
        !expected ||
        query.get('hub.mode') !== 'subscribe' ||
        given === null ||
        challenge === null ||
        !sameText(given, expected)
      ) {
        return answer(403);
      }
      return new Response(challenge, {
        status: 200,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      });
    },
  },
  {
    method: 'POST',
    path: 'webhook',
    public: true,
    handler: async (request, ctx) => {
      const body = new Uint8Array(await request.arrayBuffer());
      const signature = request.headers.get('x-hub-signature-256');
      if (!signatureValid(ctx.config.chat.appSecret, signature, body)) {
        ctx.log.info('chat webhook refused: signature missing, malformed or wrong');
        return answer(403);
      }
      let payload: unknown;
      try {
        payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
      } catch {
        return answer(400);
      }
      const changes = changesOf(payload);
      if (!changes) return answer(400);
      try {
        const stored = await storePayload(ctx, changes);
        ctx.log.info(stored, 'chat webhook stored');
        // What was not stored says why, at warn: a number that stopped serving is an
        // operator's to fix (a second workspace beside SVC_CHAT_PHONE_NUMBER_ID's).
        if (stored.unrouted) {
          ctx.log.warn(
            { dropped: stored.dropped, unrouted: stored.unrouted },
            `chat payload not routed: ${Object.values(stored.unrouted)[0]}`,
          );
        }
        if (stored.media) wakeMediaWorker();
        return answer(200);
      } catch (error) {
        // 500 makes the platform deliver again; the redelivery is stored once.
        ctx.log.error({ err: error }, 'chat webhook not stored');
        return answer(500);
      }
    },
  },
];
