import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HostPort } from '../config.js';
import type { Logger } from '../log.js';
import { collectProcessMetrics, registry, scrape } from './registry.js';

export const METRICS_PATH = '/metrics';

export interface MetricsServer {
  /** `http://host:port` it listens on. */
  url: string;
  close(): Promise<void>;
}

/**
 * SVC_METRICS_ADDR's listener: `GET /metrics` in Prometheus text format and nothing else.
 * It is apart from the public port because its figures name operations, kinds and routes
 * an operator may not want every client to read.
 */
export async function startMetricsServer(addr: HostPort, log: Logger): Promise<MetricsServer> {
  collectProcessMetrics();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== METRICS_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain' }).end();
      return;
    }
    scrape().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => {
        log.error({ err: error }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('scrape failed\n');
      },
    );
  });
  await listen(server, addr);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  log.info({ url: `${url}${METRICS_PATH}` }, 'serving metrics');
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function listen(server: Server, addr: HostPort): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(addr.port, addr.host || undefined, () => resolve());
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    const where = `${addr.host.includes(':') ? `[${addr.host}]` : addr.host}:${addr.port}`;
    throw new Error(`cannot serve metrics on ${where} (${code}); set SVC_METRICS_ADDR`, {
      cause: error,
    });
  }
}
