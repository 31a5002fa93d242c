import type { IncomingMessage, ServerResponse } from 'node:http';
import { scopesAllow, type AccessCatalogue } from '../auth/access.js';
import type { CredentialCache } from '../auth/credential-cache.js';
import { resolveCredential } from '../auth/credentials.js';
import type { Config } from '../config.js';
import type { Actor } from '../context.js';
import type { Database } from '../db/client.js';
import type { LoadedPlugin } from '../plugin-host/host.js';
import { createSlots } from './guards/slots.js';
import { sendJson } from './node-fetch-bridge.js';

/**
 * Who may reach a plugin's routes that are not public (SPEC 5 and 8.1): a signed-in
 * caller; a token must hold the plugin's route area (`<area>:read` for GET and HEAD,
 * `<area>:write` otherwise) whatever the path; each user holds at most
 * SVC_STREAMS_PER_USER such requests open, each closed after SVC_STREAM_LIFETIME.
 */
export function createPluginGuard(deps: {
  config: Config;
  database: Database;
  access: AccessCatalogue;
  credentials: CredentialCache;
}) {
  const { config } = deps;
  const slots = createSlots({ perKey: config.graph.streamsPerUser });
  const retryAfter = String(Math.max(1, Math.ceil(config.graph.retryAfterMs / 1000)));

  return async function guard(
    req: IncomingMessage,
    res: ServerResponse,
    plugin: LoadedPlugin,
  ): Promise<{ actor: Actor } | null> {
    const credential = await resolveCredential(
      deps.database.db,
      deps.access,
      req.headers,
      deps.credentials,
    );
    if ('invalidToken' in credential) {
      sendJson(res, 401, { error: 'invalid token' });
      return null;
    }
    const { actor } = credential;
    if (!actor) {
      sendJson(res, 401, { error: 'authentication required' });
      return null;
    }
    const area = plugin.definition?.routeArea;
    if (area && actor.token) {
      const scope =
        `${area}:${req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write'}` as const;
      if (!scopesAllow(actor.token.scopes, scope)) {
        sendJson(res, 403, { error: `scope required: ${scope}` });
        return null;
      }
    }
    const release = slots.tryTake(actor.userId);
    if (!release) {
      sendJson(res, 429, { error: 'too many open requests' }, { 'retry-after': retryAfter });
      return null;
    }
    const lifetime = setTimeout(() => res.destroy(), config.graph.streamLifetimeMs);
    res.once('close', () => {
      clearTimeout(lifetime);
      release();
    });
    return { actor };
  };
}
