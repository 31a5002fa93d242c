import { afterAll, beforeAll, expect } from '@jest/globals';
import { loadConfig, type Config, type Env } from '../../src/config.js';
import type { Db } from '../../src/db/client.js';
import { createLogger, type Logger } from '../../src/log.js';
import type { InProcessOptions } from '../../src/http/app.js';
import type { LoadOptions } from '../../src/plugin-host/host.js';
import { startService, type Service } from '../../src/server.js';
import type { User } from '../../src/users/tables.js';
import type { Workspace } from '../../src/workspaces/tables.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { bearer, createUser, createWorkspace, tokenFor } from './factories.js';

export interface LogLine {
  level: string;
  msg?: string;
  [key: string]: unknown;
}

/** A logger whose lines the test can read. */
export function captureLogger(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  });
  return { log, lines };
}

/** Configuration from `env` as an operator would write it, listening on a free port. */
export function testConfig(env: Env = {}): Config {
  const { config, problems } = loadConfig(env);
  expect(problems).toEqual([]);
  // SVC_METRICS_ADDR names a host; its port becomes a free one, like SVC_ADDR's.
  const metricsAddr = config.server.metricsAddr && { ...config.server.metricsAddr, port: 0 };
  return {
    ...config,
    server: { ...config.server, addr: { host: '127.0.0.1', port: 0 }, metricsAddr },
  };
}

export interface TestService {
  service: Service;
  /**
   * `http://127.0.0.1:port` of a service started with `listen: true`; reading it on one
   * that does not listen throws (reach that one with `request` or `fetch`).
   */
  readonly url: string;
  /** The origin in-process requests are addressed to: `url` when listening. */
  origin: string;
  /** Answers `request` in-process (src/http/app.ts inProcessFetch): no socket. */
  fetch(request: Request, options?: InProcessOptions): Promise<Response>;
  /**
   * Sends `init` to `path` (or an absolute URL) in-process, like `fetch(url, init)` over
   * a socket would, from 127.0.0.1 unless `options.remoteAddress` says otherwise.
   */
  request(path: string, init?: RequestInit, options?: InProcessOptions): Promise<Response>;
  db: TestDatabase;
  lines: LogLine[];
  workspace: Workspace;
  /** An admin of `workspace`, and a token of theirs holding every area. */
  admin: User;
  adminToken: string;
  /** Headers that sign a request in as the admin. */
  adminHeaders: Record<string, string>;
  /**
   * POSTs a graph operation as the admin (unless `headers` carries its own
   * `authorization` or `cookie`) and answers status, headers and the parsed body.
   */
  graph(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: GraphBody }>;
  /** The same, with no credential. */
  anonymous(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: GraphBody }>;
  stop(): Promise<void>;
}

export interface GraphError {
  message: string;
  path?: (string | number)[];
  extensions: {
    code: string;
    reason?: string;
    meta?: Record<string, unknown>;
    [key: string]: unknown;
  };
}

export interface GraphBody {
  data?: Record<string, unknown> | null;
  errors?: GraphError[];
}

export interface TestServiceOptions {
  env?: Env;
  plugins?: LoadOptions;
  db?: TestDatabase;
  /**
   * Listen on a free loopback port (default false): only a test of transport needs one
   * (README, Tests). Without it every request goes in-process.
   */
  listen?: boolean;
}

/** Where in-process requests are addressed when the service does not listen. */
const IN_PROCESS_ORIGIN = 'http://127.0.0.1';

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const db = options.db ?? (await createTestDatabase());
  const { log, lines } = captureLogger();
  const service = await startService({
    config: testConfig(options.env),
    log,
    databaseUrl: db.url,
    plugins: options.plugins ?? { only: [] },
    listen: options.listen ?? false,
  });
  const origin = service.url || IN_PROCESS_ORIGIN;
  const request = (path: string, init?: RequestInit, inProcess?: InProcessOptions) =>
    service.fetch(new Request(new URL(path, origin), init), inProcess);
  const workspace = await createWorkspace(db.database.db);
  const admin = await createUser(db.database.db, workspace, { role: 'admin' });
  const adminToken = await tokenFor(db.database.db, admin);
  const adminHeaders = bearer(adminToken);
  async function post(
    query: string,
    variables: Record<string, unknown> | undefined,
    headers: Record<string, string>,
  ) {
    const response = await request('/api/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as GraphBody,
    };
  }
  return {
    service,
    get url() {
      if (!service.url) {
        throw new Error('this test service does not listen: start it with { listen: true }');
      }
      return service.url;
    },
    origin,
    fetch: (req, inProcess) => service.fetch(req, inProcess),
    request,
    db,
    lines,
    workspace,
    admin,
    adminToken,
    adminHeaders,
    graph: (query, variables, headers = {}) =>
      post(
        query,
        variables,
        'authorization' in headers || 'cookie' in headers
          ? headers
          : { ...adminHeaders, ...headers },
      ),
    anonymous: (query, variables, headers = {}) => post(query, variables, headers),
    async stop() {
      await service.shutdown();
      if (!options.db) await db.drop();
    },
  };
}

/** A test service and the Drizzle handle on its database, for tests that read rows back. */
export async function startServiceWithDb(
  options: TestServiceOptions = {},
): Promise<{ svc: TestService; db: Db }> {
  const svc = await startTestService(options);
  return { svc, db: svc.db.database.db };
}

/**
 * One test service for the tests of the enclosing `describe` (or file): started before
 * them and stopped after them. The answer gives the service inside a test or hook.
 */
export function useTestService(options: TestServiceOptions = {}): () => TestService {
  let svc: TestService | undefined;
  beforeAll(async () => {
    svc = await startTestService(options);
  });
  afterAll(() => svc?.stop());
  return () => {
    if (!svc) throw new Error('the test service starts in beforeAll: ask for it in a test');
    return svc;
  };
}
