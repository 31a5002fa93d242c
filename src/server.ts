import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildCatalogue, type AccessCatalogue } from './auth/access.js';
import { startHousekeeping } from './auth/housekeeping.js';
import type { Config } from './config.js';
import { createDatabase, SERVE_POOL_SIZE, type Database } from './db/client.js';
import { createQueryGate, type QueryGate, type QueryGateOptions } from './db/gate.js';
import { startReadRouting, type ReadRouting } from './db/replicas.js';
import { startEventBus, type EventBus } from './events/bus.js';
import { holdCredentials, type HeldCredentials } from './auth/credential-cache.js';
import { listenForCacheChanges } from './workspaces/cache.js';
import {
  applyMigrations,
  coreMigrations,
  withMigrationLock,
  type MigrationSet,
} from './db/migrate.js';
import { buildSchema } from './graph/schema.js';
import { createApp, inProcessFetch, type App, type InProcessFetch } from './http/app.js';
import { setEventCatalogue } from './webhooks/service.js';
import { startWebhookWorker } from './webhooks/worker.js';
import type { Logger } from './log.js';
import { addSources } from './metrics/registry.js';
import { startMetricsServer, type MetricsServer } from './metrics/server.js';
import { outboxFigures } from './webhooks/outbox.js';
import { startTracing, type Tracing } from './tracing/tracing.js';
import {
  loadPlugins,
  pluginMigrationSets,
  startPlugins,
  stopPlugins,
  type LoadedPlugin,
  type LoadOptions,
} from './plugin-host/host.js';

export interface ServiceOptions {
  config: Config;
  log: Logger;
  databaseUrl: string;
  plugins?: LoadOptions;
  /**
   * Whether to listen on SVC_ADDR (default true). Without it the service answers only
   * in-process, through `fetch`: tests that reach the graph need no port.
   */
  listen?: boolean;
}

export interface Service {
  /** `http://host:port` the server listens on; empty when started with `listen: false`. */
  url: string;
  app: App;
  /**
   * Answers a request in-process, through the same handler and drain as the socket's
   * requests, with no connection (src/http/app.ts inProcessFetch).
   */
  fetch: InProcessFetch;
  database: Database;
  plugins: readonly LoadedPlugin[];
  /** Areas, capabilities and roles of the core and the plugins. */
  access: AccessCatalogue;
  /** The process's event bus: one LISTEN connection fanning events out to its streams. */
  events: EventBus;
  /** `http://host:port` of the SVC_METRICS_ADDR listener; null when it is off. */
  metricsUrl: string | null;
  /** Runs the three shutdown graces one after another; safe to call twice. */
  shutdown(): Promise<void>;
}

/** Applies the core's migrations, then every plugin's, under the one advisory lock. */
export async function migrateAll(
  database: Database,
  plugins: readonly LoadedPlugin[],
  log: Logger,
): Promise<MigrationSet[]> {
  const sets = [coreMigrations, ...pluginMigrationSets(plugins)];
  await withMigrationLock(database, { log }, async () => {
    for (const set of sets) await applyMigrations(database, set, log);
  });
  return sets;
}

/**
 * How long past SVC_GRAPH_OPERATION_TIMEOUT a statement of the serving pool may run. The
 * deadline cancels a request's statements itself; this is the backstop should a cancel
 * not arrive, so nothing a request started outlives its answer by more than this.
 */
const STATEMENT_TIMEOUT_MARGIN_MS = 5_000;

/**
 * One caller's statements hold at most half a pool (docs/scaling.md), unless it is alone:
 * with nobody else's request through the gate for a second, it may hold all but two, so
 * one busy caller on a quiet service is not held to half of it, and a newcomer finds two
 * connections free while the first caller's statements drain back to its share. All
 * callers' transactions together hold all but two as well: each may wait for a statement
 * beside it, which then always finds a connection.
 */
const GATE_OPTIONS: QueryGateOptions = {
  share: Math.floor(SERVE_POOL_SIZE / 2),
  alone: { max: SERVE_POOL_SIZE - 2, quietMs: 1_000 },
  transactions: SERVE_POOL_SIZE - 2,
};

/** Migrations on a pool of their own: they may run longer than any request's statement. */
async function migrateOnce(
  url: string,
  plugins: readonly LoadedPlugin[],
  log: Logger,
): Promise<MigrationSet[]> {
  const database = createDatabase(url, { max: 2, applicationName: 'svc migrate' });
  try {
    return await migrateAll(database, plugins, log);
  } finally {
    await database.close();
  }
}

/**
 * `svc serve`: migrations, plugins, then the HTTP server with SPEC 8.2's timeouts. Any
 * number of these may share one database; nothing here is kept only in memory.
 */
export async function startService(options: ServiceOptions): Promise<Service> {
  const { config, log } = options;
  const database = createDatabase(options.databaseUrl, {
    statementTimeoutMs: config.graph.operationTimeoutMs + STATEMENT_TIMEOUT_MARGIN_MS,
  });
  let events: EventBus | undefined;
  let cacheChanges: { unlisten(): Promise<void> } | undefined;
  let credentials: HeldCredentials | undefined;
  // Before the graph is built: its plugins and the gate's spans ask whether it is on.
  const tracing = config.tracing ? await startTracing(config.tracing, log) : null;
  try {
    const plugins = await loadPlugins(options.plugins);
    const migrationSets = await migrateOnce(options.databaseUrl, plugins, log);
    const schema = buildSchema();
    const access = buildCatalogue(plugins);
    setEventCatalogue(plugins);
    events = await startEventBus(database, log);
    cacheChanges = await listenForCacheChanges(database, config, log);
    credentials = await holdCredentials(database, log);
    return await listen({
      listening: options.listen ?? true,
      config,
      log,
      database,
      plugins,
      migrationSets,
      schema,
      access,
      events,
      cacheChanges,
      credentials,
      tracing,
    });
  } catch (error) {
    await tracing?.shutdown();
    await credentials?.close();
    await cacheChanges?.unlisten();
    await events?.close();
    await database.close();
    throw error;
  }
}

async function listen(deps: {
  listening: boolean;
  config: Config;
  log: Logger;
  database: Database;
  plugins: readonly LoadedPlugin[];
  migrationSets: MigrationSet[];
  schema: ReturnType<typeof buildSchema>;
  access: AccessCatalogue;
  events: EventBus;
  cacheChanges: { unlisten(): Promise<void> };
  credentials: HeldCredentials;
  tracing: Tracing | null;
}): Promise<Service> {
  const { config, log, database, plugins, events, listening } = deps;
  const cancel = new AbortController();
  let shuttingDown = false;
  const primaryGate = createQueryGate(database, GATE_OPTIONS);
  const routing = await startReplicas(config, database, primaryGate, log);
  const gate: QueryGate = routing ?? primaryGate;
  const app = createApp({
    ...deps,
    credentials: deps.credentials.cache,
    gate,
    shutdownSignal: cancel.signal,
    isShuttingDown: () => shuttingDown,
  });
  const running = trackRequests();
  // One request listener for both ways in: a second 'request' listener would make the
  // server copy its listener list on every request.
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    running.track(res);
    void app.handle(req, res);
  };
  const server = createHttpServer(
    {
      headersTimeout: config.http.readHeaderTimeoutMs,
      requestTimeout: config.http.readTimeoutMs,
      keepAliveTimeout: config.http.idleTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingInterval(config.http),
    },
    serve,
  );
  const fetch = inProcessFetch(serve);

  await startPlugins(plugins, { config, database, log });
  let metrics: MetricsServer | null = null;
  try {
    if (listening) await bind(server, config.server.addr);
    if (config.server.metricsAddr) {
      metrics = await startMetricsServer(config.server.metricsAddr, log);
    }
  } catch (error) {
    server.close();
    await stopPlugins(plugins, config.http.shutdownStopGraceMs, log);
    await routing?.close();
    throw error;
  }
  const removeSources = addSources({
    poolSize: () => SERVE_POOL_SIZE,
    gate: () => gate.totals(),
    subscribers: () => events.size(),
    outbox: () => outboxFigures(database.db),
  });
  // Background work starts once the address is ours: a start that cannot listen has
  // nothing running against the database it is about to close, so it stops with one line.
  const stopHousekeeping = startHousekeeping({ config, database, log, plugins });
  const webhookWorker = startWebhookWorker({ database, config, log });
  const url = listening ? serverUrl(server) : '';
  if (listening) log.info({ url }, 'listening');

  let stopped: Promise<void> | undefined;
  async function shutdown(): Promise<void> {
    shuttingDown = true;
    log.info('shutting down');
    server.close();
    server.closeIdleConnections();
    // Open streams end now rather than at the cancel grace: each completes, its client
    // reconnects (to another process), and draining waits only for ordinary requests.
    events.endSubscriptions();
    if (!(await running.settled(config.http.shutdownGraceMs))) {
      log.warn({ running: running.count() }, 'cancelling requests still running');
      cancel.abort();
      await running.settled(config.http.shutdownCancelGraceMs);
    }
    server.closeAllConnections();
    removeSources();
    await metrics?.close();
    stopHousekeeping();
    await webhookWorker.stop();
    await stopPlugins(plugins, config.http.shutdownStopGraceMs, log);
    await deps.credentials.close();
    await deps.cacheChanges.unlisten();
    await events.close();
    await deps.tracing?.shutdown();
    await routing?.close();
    await database.close();
    log.info('stopped');
  }
  return {
    url,
    app,
    fetch,
    database,
    plugins,
    access: deps.access,
    events,
    metricsUrl: metrics?.url ?? null,
    shutdown: () => (stopped ??= shutdown()),
  };
}

function serverUrl(server: Server): string {
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * SVC_DATABASE_REPLICA_URLS: a pool and a query gate per replica, and the routing that
 * sends qualifying reads there (src/db/replicas.ts); null when none is configured. A
 * caller that ran a mutation reads from the primary until that mutation has surely
 * committed (its deadline, plus the statement backstop) and a replica within the lag
 * bound has it.
 */
async function startReplicas(
  config: Config,
  primary: Database,
  primaryGate: QueryGate,
  log: Logger,
): Promise<ReadRouting | null> {
  const { replicaUrls, replicaMaxLagMs } = config.server;
  if (replicaUrls.length === 0) return null;
  const statementTimeoutMs = config.graph.operationTimeoutMs + STATEMENT_TIMEOUT_MARGIN_MS;
  const replicas = replicaUrls.map((url) => {
    const database = createDatabase(url, {
      statementTimeoutMs,
      applicationName: 'svc replica',
      targetSessionAttrs: null,
    });
    return {
      database,
      gate: createQueryGate(database, GATE_OPTIONS),
    };
  });
  try {
    return await startReadRouting({
      primary,
      primaryGate,
      replicas,
      maxLagMs: replicaMaxLagMs,
      writeWindowMs: statementTimeoutMs + replicaMaxLagMs,
      log,
    });
  } catch (error) {
    await Promise.all(replicas.map((replica) => replica.database.close()));
    throw error;
  }
}

/**
 * Listens on `addr`; an empty host (SVC_ADDR=:8080) binds every interface. An address
 * in use or not ours to bind fails with one plain sentence naming it and SVC_ADDR (the
 * command prints it as is), the system's error kept as its cause.
 */
async function bind(server: Server, addr: Config['server']['addr']): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(addr.port, addr.host || undefined, () => resolve());
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const where = `${addr.host.includes(':') ? `[${addr.host}]` : addr.host}:${addr.port}`;
    if (code === 'EADDRINUSE') {
      throw new Error(
        `cannot listen on ${where}: the address is already in use (EADDRINUSE); ` +
          'stop what holds it or set SVC_ADDR',
        { cause: error },
      );
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new Error(`cannot listen on ${where} (${code}); set SVC_ADDR`, { cause: error });
    }
    throw error;
  }
}

/**
 * How often Node looks for connections past the header or read timeout. Its default of
 * 30 s would let a stalled client hold a connection up to 30 s past either timeout; a
 * tenth of the shorter one (100 ms to 30 s) keeps them about as written.
 */
function connectionsCheckingInterval(http: Config['http']): number {
  const shortest = Math.min(http.readHeaderTimeoutMs, http.readTimeoutMs);
  return Math.min(30_000, Math.max(100, Math.floor(shortest / 10)));
}

/**
 * Counts requests in flight, over the socket and in-process alike, and tells when none
 * are left (or the wait ran out).
 */
function trackRequests() {
  let count = 0;
  let idle: (() => void) | null = null;
  function track(res: ServerResponse): void {
    count += 1;
    res.once('close', () => {
      count -= 1;
      if (count === 0) idle?.();
    });
  }
  return {
    track,
    count: () => count,
    settled(ms: number): Promise<boolean> {
      if (count === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        idle = () => {
          clearTimeout(timer);
          resolve(true);
        };
      });
    },
  };
}
