import type { IncomingMessage, ServerResponse } from 'node:http';
import { buildInteractivePage, INTERACTIVE_ASSETS_PATH } from '../graph/interactive-page.js';
import { createStaticAnswer, type StaticAnswer } from './compression.js';
import { sendJson, sendStaticAnswer } from './node-fetch-bridge.js';

/** As Yoga would judge it: a GET whose Accept names `text/html`, a browser opening the page. */
export function asksForInteractivePage(req: IncomingMessage): boolean {
  return req.method === 'GET' && (req.headers.accept ?? '').includes('text/html');
}

/** Whether `path` names one of the page's assets (served only with SVC_DEV_GRAPHIQL). */
export function isInteractiveAsset(path: string): boolean {
  return path.startsWith(INTERACTIVE_ASSETS_PATH);
}

// The page asks again each visit (a few kilobytes, naming the current assets); an asset's
// name changes with its content, so a browser keeps it for good and never asks again.
const PAGE_CACHE = 'no-cache';
const ASSET_CACHE = 'public, max-age=31536000, immutable';

interface Served {
  page: StaticAnswer;
  assets: Map<string, StaticAnswer>;
}

// One page for the process: it depends on nothing a service is configured with.
let served: Promise<Served> | null = null;

function load(): Promise<Served> {
  served ??= buildInteractivePage().then(
    ({ html, assets }) => ({
      page: createStaticAnswer(html, 'text/html; charset=utf-8', { 'cache-control': PAGE_CACHE }),
      assets: new Map(
        [...assets].map(([name, asset]) => [
          name,
          createStaticAnswer(asset.body, asset.contentType, { 'cache-control': ASSET_CACHE }),
        ]),
      ),
    }),
    (error: unknown) => {
      served = null; // the next request tries again
      throw error;
    },
  );
  return served;
}

/**
 * Serves the interactive page (SVC_DEV_GRAPHIQL) here rather than through Yoga's GraphiQL
 * plugin, which renders the 9 MB page, bundle inlined, again for every request: built on
 * the first request, each part compressed once per coding a client asks for
 * (compression.ts), then reused.
 */
export async function sendInteractivePage(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  return sendStaticAnswer(req, res, (await load()).page);
}

/** GET (or HEAD) `<INTERACTIVE_ASSETS_PATH><name>`: an asset of the page, else 404. */
export async function sendInteractiveAsset(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return sendJson(res, 405, { error: 'method not allowed' }, { allow: 'GET, HEAD' });
  }
  const asset = (await load()).assets.get(path.slice(INTERACTIVE_ASSETS_PATH.length));
  if (!asset) return sendJson(res, 404, { error: 'not found' });
  return sendStaticAnswer(req, res, asset);
}
