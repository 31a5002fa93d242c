import type { IncomingMessage, ServerResponse } from 'node:http';
import { renderInteractivePage } from '../graph/interactive-page.js';
import { createStaticAnswer, type StaticAnswer } from './compression.js';
import { sendStaticAnswer } from './node-fetch-bridge.js';

/** As Yoga would judge it: a GET whose Accept names `text/html`, a browser opening the page. */
export function asksForInteractivePage(req: IncomingMessage): boolean {
  return req.method === 'GET' && (req.headers.accept ?? '').includes('text/html');
}

// One page for the process: it depends on nothing a service is configured with.
let page: Promise<StaticAnswer> | null = null;

/**
 * Serves the interactive page (SVC_DEV_GRAPHIQL) here rather than through Yoga's GraphiQL
 * plugin, which renders the 9 MB page again for every request: rendered on the first
 * request, compressed once per coding a client asks for (compression.ts), then reused.
 */
export async function sendInteractivePage(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  page ??= renderInteractivePage().then(
    (html) => createStaticAnswer(html, 'text/html; charset=utf-8'),
    (error: unknown) => {
      page = null; // the next request tries again
      throw error;
    },
  );
  return sendStaticAnswer(req, res, await page);
}
