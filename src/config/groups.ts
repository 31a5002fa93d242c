import type { EnvReader, GroupReader } from './reader.js';
import {
  baseUrl,
  byteSize,
  cidrList,
  corsOrigins,
  count,
  databaseUrl,
  duration,
  replicaLag,
  replicaUrls,
  graceDuration,
  hexKey,
  listenAddress,
  logLevel,
  port,
  retentionDuration,
  text,
  timerDuration,
  webhookAllowList,
  wholeNumber,
} from './schemas.js';
import type { Config } from './types.js';

// One reader per SPEC 8.2 table. Defaults are written as the spec writes them.

export function readServer(env: EnvReader): Config['server'] {
  const r = env.group('server');
  return {
    // Optional here: `serve` refuses to start without it, `dev` embeds a database.
    databaseUrl: r.optional('SVC_DATABASE_URL', databaseUrl),
    replicaUrls: r.read('SVC_DATABASE_REPLICA_URLS', replicaUrls, ''),
    replicaMaxLagMs: r.read('SVC_DATABASE_REPLICA_MAX_LAG', replicaLag, '2s'),
    addr: r.read('SVC_ADDR', listenAddress, 'localhost:8080'),
    webDir: r.optional('SVC_WEB_DIR', text),
    trustedProxies: r.read('SVC_TRUSTED_PROXIES', cidrList, ''),
    corsOrigins: r.read('SVC_CORS_ORIGINS', corsOrigins, ''),
    devGraphiql: env.isSet('SVC_DEV_GRAPHIQL'),
    devPostgresPort: r.optional('SVC_DEV_POSTGRES_PORT', port),
    metricsAddr: r.optional('SVC_METRICS_ADDR', listenAddress),
    logLevel: r.read('SVC_LOG_LEVEL', logLevel, 'info'),
  };
}

export function readInvitations(env: EnvReader): Config['invitations'] {
  const r = env.group('invitations');
  return {
    inviteTtlMs: r.read('SVC_INVITE_TTL', duration, '168h'),
    resetTtlMs: r.read('SVC_RESET_TTL', duration, '1h'),
    resetAttempts: r.read('SVC_RESET_ATTEMPTS', count, '3'),
    resetLinks: r.read('SVC_RESET_LINKS', count, '3'),
    resetCooldownMs: r.read('SVC_RESET_COOLDOWN', duration, '1m'),
  };
}

export function readWorkspaces(env: EnvReader): Config['workspaces'] {
  const r = env.group('workspaces');
  return {
    machineGraceMs: r.read('SVC_TENANT_MACHINE_GRACE', graceDuration, '336h'),
    held: r.read('SVC_TENANTS_HELD', count, '256'),
    refreshMs: r.read('SVC_TENANTS_REFRESH', timerDuration, '1m'),
  };
}

type GraphLimits = Omit<
  Config['graph'],
  'pageSize' | 'pageCap' | 'toastMs' | 'listPageSizes' | 'listPageSize' | 'formatLocale'
>;

/** SPEC 8.1's variables and 8.2's "Graph limits and anonymous callers". */
export function readGraphLimits(env: EnvReader): GraphLimits {
  const r = env.group('graph-limits');
  return {
    operationsPerUser: r.read('SVC_GRAPH_OPERATIONS_PER_USER', count, '20'),
    streamsPerUser: r.read('SVC_STREAMS_PER_USER', count, '5'),
    operationTimeoutMs: r.read('SVC_GRAPH_OPERATION_TIMEOUT', timerDuration, '60s'),
    bodyMaxBytes: r.read('SVC_GRAPH_BODY_MAX_BYTES', byteSize, '1048576'),
    uploadMaxBytes: r.read('SVC_GRAPH_UPLOAD_MAX_BYTES', byteSize, '6291456'),
    streamLifetimeMs: r.read('SVC_STREAM_LIFETIME', timerDuration, '5m'),
    retryAfterMs: r.read('SVC_GRAPH_RETRY_AFTER', timerDuration, '1s'),
    anonymous: {
      maxBytes: r.read('SVC_GRAPH_ANONYMOUS_MAX_BYTES', byteSize, '16384'),
      maxTokens: r.read('SVC_GRAPH_ANONYMOUS_MAX_TOKENS', count, '64'),
      queryMaxBytes: r.read('SVC_GRAPH_ANONYMOUS_QUERY_MAX_BYTES', byteSize, '1024'),
      answerMaxBytes: r.read('SVC_GRAPH_ANONYMOUS_ANSWER_MAX_BYTES', byteSize, '16384'),
      perIp: r.read('SVC_GRAPH_ANONYMOUS_PER_IP', count, '5'),
      ceiling: r.read('SVC_GRAPH_ANONYMOUS_CEILING', count, '20'),
    },
  };
}

export function readHttp(env: EnvReader): Config['http'] {
  const r = env.group('http');
  const readTimeoutMs = r.read('SVC_HTTP_READ_TIMEOUT', timerDuration, '30s');
  return {
    readHeaderTimeoutMs: readHeaderTimeout(r, readTimeoutMs),
    readTimeoutMs,
    idleTimeoutMs: r.read('SVC_HTTP_IDLE_TIMEOUT', timerDuration, '2m'),
    shutdownGraceMs: r.read('SVC_SHUTDOWN_GRACE', timerDuration, '10s'),
    shutdownCancelGraceMs: r.read('SVC_SHUTDOWN_CANCEL_GRACE', timerDuration, '5s'),
    shutdownStopGraceMs: r.read('SVC_SHUTDOWN_STOP_GRACE', timerDuration, '5s'),
  };
}

/**
 * Node's http.createServer throws when headersTimeout exceeds requestTimeout, so a
 * header timeout above the read timeout is refused here, where `svc check` shows it.
 */
function readHeaderTimeout(r: GroupReader, readTimeoutMs: number): number {
  const name = 'SVC_HTTP_READ_HEADER_TIMEOUT';
  const defaultText = '10s';
  const ms = r.read(name, timerDuration, defaultText);
  if (ms <= readTimeoutMs) return ms;
  if (r.parsed(name, 'SVC_HTTP_READ_TIMEOUT')) {
    r.refuseRelation(
      name,
      `must not be above SVC_HTTP_READ_TIMEOUT, which is ${readTimeoutMs}ms`,
      defaultText,
    );
  }
  return Math.min(r.parseDefault(name, timerDuration, defaultText), readTimeoutMs);
}

export function readWebhooks(env: EnvReader): Config['webhooks'] {
  return env.group('webhooks').read('SVC_WEBHOOK_ALLOWED_HOSTS', webhookAllowList, '');
}

/**
 * SVC_OUTBOUND_ALLOWED_HOSTS, in SVC_WEBHOOK_ALLOWED_HOSTS's words and group (a refused value
 * stops what a refused webhook list stops). A base URL the operator set for a plugin's
 * platform (SVC_CHAT_GRAPH_URL) is vouched for: its host and port count as listed, which
 * opens an internal address there but never a link-local or metadata one.
 */
export function readOutbound(env: EnvReader, chat: Config['chat']): Config['outbound'] {
  const listed = env.group('webhooks').read('SVC_OUTBOUND_ALLOWED_HOSTS', webhookAllowList, '');
  if (!env.isSet('SVC_CHAT_GRAPH_URL') || env.refused('SVC_CHAT_GRAPH_URL')) return listed;
  const base = new URL(chat.graphUrl);
  const host = base.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = base.port !== '' ? Number(base.port) : base.protocol === 'https:' ? 443 : 80;
  return { ...listed, allowedHostPorts: [...listed.allowedHostPorts, { host, port }] };
}

export function readChat(env: EnvReader): Config['chat'] {
  const r = env.group('chat');
  return {
    verifyToken: r.optional('SVC_CHAT_VERIFY_TOKEN', text),
    appSecret: r.optional('SVC_CHAT_APP_SECRET', text),
    accessToken: r.optional('SVC_CHAT_ACCESS_TOKEN', text),
    phoneNumberId: r.optional('SVC_CHAT_PHONE_NUMBER_ID', text),
    graphUrl: r.read('SVC_CHAT_GRAPH_URL', baseUrl, 'https://graph.facebook.com/v23.0'),
    mediaMaxBytes: r.read('SVC_CHAT_MEDIA_MAX_BYTES', byteSize, '26214400'),
    credentialsKey: r.optional('SVC_CHAT_CREDENTIALS_KEY', hexKey),
  };
}

export function readJobs(env: EnvReader): Config['jobs'] {
  return {
    concurrency: env.group('jobs').read('SVC_JOBS_CONCURRENCY', wholeNumber(1, 256), '16'),
  };
}

/** How long housekeeping keeps what it sweeps by age (docs/limits.md, "Tables fed from outside"). */
export function readHousekeeping(env: EnvReader): Config['housekeeping'] {
  return {
    eventsRetentionMs: env
      .group('housekeeping')
      .read('SVC_EVENTS_RETENTION', retentionDuration, '168h'),
  };
}

export function readFields(env: EnvReader): Config['fields'] {
  return {
    entriesMax: env
      .group('fields')
      .read('SVC_FIELDS_ENTRIES_MAX', wholeNumber(1, 2147483647), '500'),
  };
}

/**
 * Bounds on the worker processes that parse untrusted input (src/workers/run.ts). Defaults
 * suit two cores: two parses at once (each below the serving process's priority), one per
 * workspace, each at most 512 MiB.
 */
export function readWorkers(env: EnvReader): Config['workers'] {
  const r = env.group('workers');
  return {
    processes: r.read('SVC_WORKERS', count, '2'),
    perWorkspace: r.read('SVC_WORKERS_PER_WORKSPACE', count, '1'),
    waitMs: r.read('SVC_WORKER_WAIT', timerDuration, '10s'),
    memoryMaxBytes: r.read('SVC_WORKER_MEMORY_MAX', byteSize, '536870912'),
  };
}

/** Read only by commands (SPEC 8.2 "Command records"); their problems never stop serve. */
export function readCommands(env: EnvReader): Config['commands'] {
  const r = env.group('commands');
  return {
    recordTimeoutMs: r.read('SVC_COMMAND_RECORD_TIMEOUT', timerDuration, '5s'),
    recordsLimit: r.read('SVC_COMMAND_RECORDS_LIMIT', count, '50'),
    tokenTtlDays: r.read('SVC_TOKEN_TTL_DAYS', wholeNumber(0, 106751), '90'),
  };
}
