import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { Actor } from '../context.js';
import type { Database } from '../db/client.js';
import type { QueryGate } from '../db/gate.js';
import type { Logger } from '../log.js';
import type { PluginRoute } from '../plugin-host/definition.js';
import type { LoadedPlugin } from '../plugin-host/host.js';
import type { createCancellation } from './cancellation.js';
import { readBody, sendJson, sendWebResponse, toWebRequest } from './node-fetch-bridge.js';

export const PLUGIN_ROUTE_PREFIX = '/api/plugins/';

interface CompiledRoute {
  route: PluginRoute;
  segments: string[];
}

/** Matches `items/:id` against `items/42`, answering the params or null. */
export function matchPath(segments: string[], path: string[]): Record<string, string> | null {
  if (segments.length !== path.length) return null;
  const params: Record<string, string> = {};
  for (const [i, segment] of segments.entries()) {
    const actual = path[i] as string;
    if (segment.startsWith(':')) params[segment.slice(1)] = decodeURIComponent(actual);
    else if (segment !== actual) return null;
  }
  return params;
}

export interface PluginRouterDeps {
  config: Config;
  database: Database;
  gate: QueryGate;
  log: Logger;
  plugins: readonly LoadedPlugin[];
  cancellation: ReturnType<typeof createCancellation>;
  /**
   * Decides whether a caller may reach a plugin's non-public routes: the caller, or null
   * once the refusal is sent. Public routes never reach it.
   */
  guard(
    req: IncomingMessage,
    res: ServerResponse,
    plugin: LoadedPlugin,
  ): Promise<{ actor: Actor } | null>;
}

/** Serves `/api/plugins/<id>/<path>` from the routes plugins declare. */
export function createPluginRouter(deps: PluginRouterDeps) {
  const byId = new Map(
    deps.plugins.map((plugin) => [
      plugin.manifest.id,
      {
        plugin,
        routes: (plugin.definition?.routes ?? []).map((route): CompiledRoute => ({
          route,
          segments: route.path.split('/').filter(Boolean),
        })),
      },
    ]),
  );

  return async function servePluginRoute(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
  ): Promise<void> {
    const [id = '', ...rest] = url.pathname.slice(PLUGIN_ROUTE_PREFIX.length).split('/');
    const entry = byId.get(id);
    if (!entry) return sendJson(res, 404, { error: 'not found' });
    const path = rest.filter(Boolean);
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    let matched: { route: PluginRoute; params: Record<string, string> } | null = null;
    for (const { route, segments } of entry.routes) {
      const params = route.method === method ? matchPath(segments, path) : null;
      if (params) {
        matched = { route, params };
        break;
      }
    }
    // The guard runs before the plugin sees anything, even for a path it does not serve.
    let actor: Actor | null = null;
    if (!matched?.route.public) {
      const allowed = await deps.guard(req, res, entry.plugin);
      if (!allowed) return;
      actor = allowed.actor;
    }
    if (!matched) return sendJson(res, 404, { error: 'not found' });

    const body =
      req.method === 'GET' || req.method === 'HEAD'
        ? null
        : await readBody(req, deps.config.graph.uploadMaxBytes);
    if (body === 'too-large') return sendJson(res, 413, { error: 'request body too large' });
    const { signal } = deps.cancellation.begin(res);
    const request = toWebRequest(req, url, body, signal);
    const response = await matched.route.handler(request, {
      config: deps.config,
      // A public route's callers (a platform's webhooks) share one turn of the pool.
      database: deps.gate.forRequest(actor?.userId ?? `route:${id}`, signal),
      log: deps.log.child({ plugin: id }),
      params: matched.params,
      actor,
      workspaceId: actor?.workspaceId ?? null,
      signal,
    });
    await sendWebResponse(res, response, { sized: true });
  };
}
