import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import {
  loadConfig,
  type Config,
  type ConfigGroup,
  type ConfigProblem,
  type Env,
} from '../../src/config.js';
import { requireDatabaseUrl } from '../../src/config/database-url.js';
import {
  commandRecordProblems,
  formatProblems,
  problemsStoppingPluginCommands,
  problemsStoppingServe,
} from '../../src/config/problems.js';
import { SECRET_VARIABLES } from '../../src/config/reader.js';

/** Reads a value out of the config by a dotted path such as `graph.anonymous.perIp`. */
function at(config: Config, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((value, key) => (value as Record<string, unknown>)[key], config);
}

function problemsOf(env: Env): ConfigProblem[] {
  return loadConfig(env).problems;
}

const KEY = 'ab'.repeat(32);
const tempDir = mkdtempSync(join(tmpdir(), 'svc-config-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

/** Variable, config path, default value: every variable with a default of SPEC 2.6 to 8.2. */
const DEFAULTS: [string, string, unknown][] = [
  ['SVC_DATABASE_URL', 'server.databaseUrl', null],
  ['SVC_DATABASE_REPLICA_URLS', 'server.replicaUrls', []],
  ['SVC_DATABASE_REPLICA_MAX_LAG', 'server.replicaMaxLagMs', 2000],
  ['SVC_ADDR', 'server.addr', { host: 'localhost', port: 8080 }],
  ['SVC_WEB_DIR', 'server.webDir', null],
  ['SVC_TRUSTED_PROXIES', 'server.trustedProxies', []],
  ['SVC_CORS_ORIGINS', 'server.corsOrigins', []],
  ['SVC_DEV_GRAPHIQL', 'server.devGraphiql', false],
  ['SVC_DEV_POSTGRES_PORT', 'server.devPostgresPort', null],
  ['SVC_METRICS_ADDR', 'server.metricsAddr', null],
  ['SVC_LOG_LEVEL', 'server.logLevel', 'info'],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'tracing', null],
  ['SVC_SMTP_HOST', 'mail', null],
  ['SVC_INVITE_TTL', 'invitations.inviteTtlMs', 168 * 3_600_000],
  ['SVC_RESET_TTL', 'invitations.resetTtlMs', 3_600_000],
  ['SVC_RESET_ATTEMPTS', 'invitations.resetAttempts', 3],
  ['SVC_RESET_LINKS', 'invitations.resetLinks', 3],
  ['SVC_RESET_COOLDOWN', 'invitations.resetCooldownMs', 60_000],
  ['SVC_TENANT_MACHINE_GRACE', 'workspaces.machineGraceMs', 336 * 3_600_000],
  ['SVC_TENANTS_HELD', 'workspaces.held', 256],
  ['SVC_TENANTS_REFRESH', 'workspaces.refreshMs', 60_000],
  ['SVC_GRAPH_PAGE_SIZE', 'graph.pageSize', 50],
  ['SVC_GRAPH_PAGE_CAP', 'graph.pageCap', 200],
  ['SVC_TOAST_DURATION', 'graph.toastMs', 6000],
  ['SVC_LIST_PAGE_SIZES', 'graph.listPageSizes', [10, 20, 50, 100]],
  ['SVC_LIST_PAGE_SIZE', 'graph.listPageSize', 20],
  ['SVC_FORMAT_LOCALE', 'graph.formatLocale', 'es-ES'],
  ['SVC_GRAPH_OPERATIONS_PER_USER', 'graph.operationsPerUser', 20],
  ['SVC_STREAMS_PER_USER', 'graph.streamsPerUser', 5],
  ['SVC_GRAPH_OPERATION_TIMEOUT', 'graph.operationTimeoutMs', 60_000],
  ['SVC_GRAPH_BODY_MAX_BYTES', 'graph.bodyMaxBytes', 1048576],
  ['SVC_GRAPH_UPLOAD_MAX_BYTES', 'graph.uploadMaxBytes', 6291456],
  ['SVC_STREAM_LIFETIME', 'graph.streamLifetimeMs', 300_000],
  ['SVC_GRAPH_RETRY_AFTER', 'graph.retryAfterMs', 1000],
  ['SVC_GRAPH_ANONYMOUS_MAX_BYTES', 'graph.anonymous.maxBytes', 16384],
  ['SVC_GRAPH_ANONYMOUS_MAX_TOKENS', 'graph.anonymous.maxTokens', 64],
  ['SVC_GRAPH_ANONYMOUS_QUERY_MAX_BYTES', 'graph.anonymous.queryMaxBytes', 1024],
  ['SVC_GRAPH_ANONYMOUS_ANSWER_MAX_BYTES', 'graph.anonymous.answerMaxBytes', 16384],
  ['SVC_GRAPH_ANONYMOUS_PER_IP', 'graph.anonymous.perIp', 5],
  ['SVC_GRAPH_ANONYMOUS_CEILING', 'graph.anonymous.ceiling', 20],
  ['SVC_HTTP_READ_HEADER_TIMEOUT', 'http.readHeaderTimeoutMs', 10_000],
  ['SVC_HTTP_READ_TIMEOUT', 'http.readTimeoutMs', 30_000],
  ['SVC_HTTP_IDLE_TIMEOUT', 'http.idleTimeoutMs', 120_000],
  ['SVC_SHUTDOWN_GRACE', 'http.shutdownGraceMs', 10_000],
  ['SVC_SHUTDOWN_CANCEL_GRACE', 'http.shutdownCancelGraceMs', 5000],
  ['SVC_SHUTDOWN_STOP_GRACE', 'http.shutdownStopGraceMs', 5000],
  ['SVC_WEBHOOK_ALLOWED_HOSTS', 'webhooks', { allowedCidrs: [], allowedHostPorts: [] }],
  ['SVC_OUTBOUND_ALLOWED_HOSTS', 'outbound', { allowedCidrs: [], allowedHostPorts: [] }],
  ['SVC_CHAT_VERIFY_TOKEN', 'chat.verifyToken', null],
  ['SVC_CHAT_APP_SECRET', 'chat.appSecret', null],
  ['SVC_CHAT_ACCESS_TOKEN', 'chat.accessToken', null],
  ['SVC_CHAT_PHONE_NUMBER_ID', 'chat.phoneNumberId', null],
  ['SVC_CHAT_GRAPH_URL', 'chat.graphUrl', 'https://graph.facebook.com/v23.0'],
  ['SVC_CHAT_MEDIA_MAX_BYTES', 'chat.mediaMaxBytes', 26214400],
  ['SVC_CHAT_CREDENTIALS_KEY', 'chat.credentialsKey', null],
  ['SVC_EVENTS_RETENTION', 'housekeeping.eventsRetentionMs', 168 * 3_600_000],
  ['SVC_FIELDS_ENTRIES_MAX', 'fields.entriesMax', 500],
  ['SVC_WORKERS', 'workers.processes', 2],
  ['SVC_WORKERS_PER_WORKSPACE', 'workers.perWorkspace', 1],
  ['SVC_WORKER_WAIT', 'workers.waitMs', 10_000],
  ['SVC_WORKER_MEMORY_MAX', 'workers.memoryMaxBytes', 536870912],
  ['SVC_COMMAND_RECORD_TIMEOUT', 'commands.recordTimeoutMs', 5000],
  ['SVC_COMMAND_RECORDS_LIMIT', 'commands.recordsLimit', 50],
  ['SVC_TOKEN_TTL_DAYS', 'commands.tokenTtlDays', 90],
];

describe('defaults', () => {
  test('an empty environment loads with no problem', () => {
    expect(problemsOf({})).toEqual([]);
  });

  test.each(DEFAULTS)('%s unset gives %s its default', (_name, path, value) => {
    expect(at(loadConfig({}).config, path)).toEqual(value);
  });

  test.each(DEFAULTS)('%s set to an empty string counts as unset', (name, path, value) => {
    const { config, problems } = loadConfig({ [name]: '' });
    expect(problems).toEqual([]);
    expect(at(config, path)).toEqual(value);
  });
});

/** Variable, text, config path, value read. */
const ACCEPTED: [string, string, string, unknown][] = [
  [
    'SVC_DATABASE_URL',
    'postgres://crm:p%40ss@db:5432/crm',
    'server.databaseUrl',
    'postgres://crm:p%40ss@db:5432/crm',
  ],
  [
    'SVC_DATABASE_URL',
    'postgres://crm@db1:5432,db2:5432/crm?target_session_attrs=primary',
    'server.databaseUrl',
    'postgres://crm@db1:5432,db2:5432/crm?target_session_attrs=primary',
  ],
  [
    'SVC_DATABASE_REPLICA_URLS',
    'postgres://crm:s@r1:5432/crm, postgresql://crm@r2,r3:5433/crm?sslmode=require',
    'server.replicaUrls',
    ['postgres://crm:s@r1:5432/crm', 'postgresql://crm@r2,r3:5433/crm?sslmode=require'],
  ],
  ['SVC_DATABASE_REPLICA_MAX_LAG', '500ms', 'server.replicaMaxLagMs', 500],
  ['SVC_DATABASE_REPLICA_MAX_LAG', '1h', 'server.replicaMaxLagMs', 3_600_000],
  ['SVC_ADDR', '0.0.0.0:8080', 'server.addr', { host: '0.0.0.0', port: 8080 }],
  ['SVC_ADDR', '[::1]:8080', 'server.addr', { host: '::1', port: 8080 }],
  ['SVC_ADDR', ':8080', 'server.addr', { host: '', port: 8080 }],
  ['SVC_ADDR', 'crm.internal:9000', 'server.addr', { host: 'crm.internal', port: 9000 }],
  ['SVC_WEB_DIR', './web/dist', 'server.webDir', './web/dist'],
  ['SVC_DEV_GRAPHIQL', '1', 'server.devGraphiql', true],
  ['SVC_DEV_GRAPHIQL', 'false', 'server.devGraphiql', true],
  ['SVC_DEV_POSTGRES_PORT', '54320', 'server.devPostgresPort', 54320],
  ['SVC_METRICS_ADDR', '127.0.0.1:9464', 'server.metricsAddr', { host: '127.0.0.1', port: 9464 }],
  ['SVC_METRICS_ADDR', ':9464', 'server.metricsAddr', { host: '', port: 9464 }],
  ['SVC_LOG_LEVEL', 'debug', 'server.logLevel', 'debug'],
  [
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'http://collector:4318/',
    'tracing',
    {
      endpoint: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'svc',
      sampler: { name: 'parentbased_always_on', ratio: 1 },
    },
  ],
  [
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    'https://otlp.example.com/custom',
    'tracing.endpoint',
    'https://otlp.example.com/custom',
  ],
  [
    'SVC_CORS_ORIGINS',
    'https://App.example.com/, http://localhost:5173',
    'server.corsOrigins',
    ['https://app.example.com', 'http://localhost:5173'],
  ],
  ['SVC_INVITE_TTL', '72h', 'invitations.inviteTtlMs', 72 * 3_600_000],
  ['SVC_INVITE_TTL', '720h', 'invitations.inviteTtlMs', 720 * 3_600_000],
  ['SVC_RESET_TTL', '30m', 'invitations.resetTtlMs', 1_800_000],
  ['SVC_RESET_ATTEMPTS', '10', 'invitations.resetAttempts', 10],
  ['SVC_RESET_LINKS', '1', 'invitations.resetLinks', 1],
  ['SVC_RESET_COOLDOWN', '1500ms', 'invitations.resetCooldownMs', 1500],
  ['SVC_TENANT_MACHINE_GRACE', '0s', 'workspaces.machineGraceMs', 0],
  ['SVC_TENANT_MACHINE_GRACE', '24h', 'workspaces.machineGraceMs', 86_400_000],
  ['SVC_TENANTS_HELD', '1000', 'workspaces.held', 1000],
  ['SVC_TENANTS_REFRESH', '30s', 'workspaces.refreshMs', 30_000],
  ['SVC_GRAPH_PAGE_SIZE', '200', 'graph.pageSize', 200],
  ['SVC_GRAPH_PAGE_CAP', '1250', 'graph.pageCap', 1250],
  ['SVC_TOAST_DURATION', '1ms', 'graph.toastMs', 1],
  ['SVC_TOAST_DURATION', '2147483647ms', 'graph.toastMs', 2147483647],
  ['SVC_TOAST_DURATION', '10s', 'graph.toastMs', 10_000],
  ['SVC_LIST_PAGE_SIZES', '5, 20, 200', 'graph.listPageSizes', [5, 20, 200]],
  ['SVC_LIST_PAGE_SIZE', '100', 'graph.listPageSize', 100],
  ['SVC_FORMAT_LOCALE', 'en-GB', 'graph.formatLocale', 'en-GB'],
  ['SVC_FORMAT_LOCALE', 'de-DE', 'graph.formatLocale', 'de-DE'],
  ['SVC_FORMAT_LOCALE', 'es-es', 'graph.formatLocale', 'es-ES'],
  ['SVC_GRAPH_OPERATIONS_PER_USER', '50', 'graph.operationsPerUser', 50],
  ['SVC_STREAMS_PER_USER', '1', 'graph.streamsPerUser', 1],
  ['SVC_GRAPH_OPERATION_TIMEOUT', '2m', 'graph.operationTimeoutMs', 120_000],
  ['SVC_GRAPH_BODY_MAX_BYTES', '2097152', 'graph.bodyMaxBytes', 2097152],
  ['SVC_GRAPH_UPLOAD_MAX_BYTES', '10485760', 'graph.uploadMaxBytes', 10485760],
  ['SVC_STREAM_LIFETIME', '1h', 'graph.streamLifetimeMs', 3_600_000],
  ['SVC_GRAPH_RETRY_AFTER', '500ms', 'graph.retryAfterMs', 500],
  ['SVC_GRAPH_ANONYMOUS_MAX_BYTES', '8192', 'graph.anonymous.maxBytes', 8192],
  ['SVC_GRAPH_ANONYMOUS_MAX_TOKENS', '128', 'graph.anonymous.maxTokens', 128],
  ['SVC_GRAPH_ANONYMOUS_QUERY_MAX_BYTES', '2048', 'graph.anonymous.queryMaxBytes', 2048],
  ['SVC_GRAPH_ANONYMOUS_ANSWER_MAX_BYTES', '4096', 'graph.anonymous.answerMaxBytes', 4096],
  ['SVC_GRAPH_ANONYMOUS_PER_IP', '2', 'graph.anonymous.perIp', 2],
  ['SVC_GRAPH_ANONYMOUS_CEILING', '100', 'graph.anonymous.ceiling', 100],
  ['SVC_HTTP_READ_HEADER_TIMEOUT', '5s', 'http.readHeaderTimeoutMs', 5000],
  ['SVC_HTTP_READ_TIMEOUT', '1m', 'http.readTimeoutMs', 60_000],
  ['SVC_HTTP_IDLE_TIMEOUT', '90s', 'http.idleTimeoutMs', 90_000],
  ['SVC_SHUTDOWN_GRACE', '20s', 'http.shutdownGraceMs', 20_000],
  ['SVC_SHUTDOWN_CANCEL_GRACE', '1s', 'http.shutdownCancelGraceMs', 1000],
  ['SVC_SHUTDOWN_STOP_GRACE', '2s', 'http.shutdownStopGraceMs', 2000],
  ['SVC_CHAT_VERIFY_TOKEN', 'verify-me', 'chat.verifyToken', 'verify-me'],
  ['SVC_CHAT_APP_SECRET', 'app-secret', 'chat.appSecret', 'app-secret'],
  ['SVC_CHAT_ACCESS_TOKEN', 'EAAB', 'chat.accessToken', 'EAAB'],
  ['SVC_CHAT_PHONE_NUMBER_ID', '1234567890', 'chat.phoneNumberId', '1234567890'],
  ['SVC_CHAT_GRAPH_URL', 'http://localhost:9000/', 'chat.graphUrl', 'http://localhost:9000'],
  [
    'SVC_CHAT_GRAPH_URL',
    'https://graph.facebook.com/v23.0/',
    'chat.graphUrl',
    'https://graph.facebook.com/v23.0',
  ],
  ['SVC_CHAT_MEDIA_MAX_BYTES', '1048576', 'chat.mediaMaxBytes', 1048576],
  ['SVC_CHAT_CREDENTIALS_KEY', KEY, 'chat.credentialsKey', Buffer.from(KEY, 'hex')],
  ['SVC_EVENTS_RETENTION', '1h', 'housekeeping.eventsRetentionMs', 3_600_000],
  ['SVC_EVENTS_RETENTION', '720h', 'housekeeping.eventsRetentionMs', 720 * 3_600_000],
  ['SVC_FIELDS_ENTRIES_MAX', '1', 'fields.entriesMax', 1],
  ['SVC_FIELDS_ENTRIES_MAX', '2147483647', 'fields.entriesMax', 2147483647],
  ['SVC_WORKERS', '4', 'workers.processes', 4],
  ['SVC_WORKERS_PER_WORKSPACE', '2', 'workers.perWorkspace', 2],
  ['SVC_WORKER_WAIT', '30s', 'workers.waitMs', 30_000],
  ['SVC_WORKER_MEMORY_MAX', '268435456', 'workers.memoryMaxBytes', 268435456],
  ['SVC_COMMAND_RECORD_TIMEOUT', '30s', 'commands.recordTimeoutMs', 30_000],
  ['SVC_COMMAND_RECORDS_LIMIT', '200', 'commands.recordsLimit', 200],
  ['SVC_TOKEN_TTL_DAYS', '0', 'commands.tokenTtlDays', 0],
  ['SVC_TOKEN_TTL_DAYS', '106751', 'commands.tokenTtlDays', 106751],
];

describe('accepted values', () => {
  test.each(ACCEPTED)('%s=%j sets %s', (name, text, path, value) => {
    const { config, problems } = loadConfig({ [name]: text });
    expect(problems).toEqual([]);
    expect(at(config, path)).toEqual(value);
  });
});

/** Variable, refused text, group: one or more per rule of SPEC 8.2. */
const REFUSED: [string, string, ConfigGroup][] = [
  ['SVC_DATABASE_URL', 'mysql://crm:secret@db/crm', 'server'],
  ['SVC_DATABASE_URL', 'postgres://crm:p@ss@db:5432/crm', 'server'],
  ['SVC_DATABASE_URL', 'postgres://crm:p%4@db:5432/crm', 'server'],
  ['SVC_DATABASE_URL', 'postgres://crm@db1,db2/crm?target_session_attrs=standby', 'server'],
  ['SVC_DATABASE_REPLICA_URLS', 'postgres://crm@r1/crm, mysql://crm@r2/crm', 'server'],
  ['SVC_DATABASE_REPLICA_URLS', 'postgres://crm@r1/crm?target_session_attrs=primary', 'server'],
  ['SVC_DATABASE_REPLICA_MAX_LAG', '50ms', 'server'],
  ['SVC_DATABASE_REPLICA_MAX_LAG', '2h', 'server'],
  ['SVC_DATABASE_REPLICA_MAX_LAG', 'soon', 'server'],
  ['SVC_ADDR', 'localhost', 'server'],
  ['SVC_ADDR', 'localhost:0', 'server'],
  ['SVC_ADDR', 'localhost:65536', 'server'],
  ['SVC_ADDR', '::1:8080', 'server'],
  ['SVC_DEV_POSTGRES_PORT', '0', 'server'],
  ['SVC_DEV_POSTGRES_PORT', '5432x', 'server'],
  ['SVC_METRICS_ADDR', '9464', 'server'],
  ['SVC_LOG_LEVEL', 'verbose', 'server'],
  ['SVC_METRICS_ADDR', 'localhost:0', 'server'],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318', 'server'],
  ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'ftp://collector', 'server'],
  ['OTEL_TRACES_EXPORTER', 'zipkin', 'server'],
  ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', 'server'],
  ['OTEL_EXPORTER_OTLP_HEADERS', 'no-equals-sign', 'server'],
  ['SVC_TRUSTED_PROXIES', '10.0.0.1', 'server'],
  ['SVC_TRUSTED_PROXIES', '10.0.0.0/8, 192.168.0.1', 'server'],
  ['SVC_TRUSTED_PROXIES', '::ffff:10.0.0.0/95', 'server'],
  ['SVC_TRUSTED_PROXIES', '10.0.0.0/33', 'server'],
  ['SVC_TRUSTED_PROXIES', 'proxy.internal/32', 'server'],
  ['SVC_CORS_ORIGINS', '*', 'server'],
  ['SVC_CORS_ORIGINS', 'null', 'server'],
  ['SVC_CORS_ORIGINS', 'https://app.example.com, https://*.example.com', 'server'],
  ['SVC_CORS_ORIGINS', 'https://app.example.com/app', 'server'],
  ['SVC_CORS_ORIGINS', 'https://app.example.com?x=1', 'server'],
  ['SVC_CORS_ORIGINS', 'https://app.example.com#top', 'server'],
  ['SVC_CORS_ORIGINS', 'https://user@app.example.com', 'server'],
  ['SVC_CORS_ORIGINS', 'app.example.com', 'server'],
  ['SVC_CORS_ORIGINS', 'ftp://app.example.com', 'server'],
  ['SVC_INVITE_TTL', '0s', 'invitations'],
  ['SVC_INVITE_TTL', '7d', 'invitations'],
  ['SVC_RESET_TTL', '1.5h', 'invitations'],
  ['SVC_RESET_ATTEMPTS', '0', 'invitations'],
  ['SVC_RESET_LINKS', 'three', 'invitations'],
  ['SVC_RESET_COOLDOWN', '60', 'invitations'],
  ['SVC_TENANT_MACHINE_GRACE', '-1s', 'workspaces'],
  ['SVC_TENANT_MACHINE_GRACE', '0', 'workspaces'],
  ['SVC_TENANTS_HELD', '0', 'workspaces'],
  ['SVC_TENANTS_REFRESH', '0s', 'workspaces'],
  ['SVC_GRAPH_PAGE_SIZE', '0', 'graph-lists'],
  ['SVC_GRAPH_PAGE_CAP', '2000', 'graph-lists'],
  ['SVC_GRAPH_PAGE_CAP', '0', 'graph-lists'],
  ['SVC_TOAST_DURATION', '0s', 'graph-lists'],
  ['SVC_TOAST_DURATION', '2147483648ms', 'graph-lists'],
  ['SVC_TOAST_DURATION', '6000', 'graph-lists'],
  ['SVC_LIST_PAGE_SIZES', '10,20,20', 'graph-lists'],
  ['SVC_LIST_PAGE_SIZES', '50,20', 'graph-lists'],
  ['SVC_LIST_PAGE_SIZES', '0,10', 'graph-lists'],
  ['SVC_LIST_PAGE_SIZES', '10,20,500', 'graph-lists'],
  ['SVC_LIST_PAGE_SIZE', '30', 'graph-lists'],
  ['SVC_LIST_PAGE_SIZE', 'twenty', 'graph-lists'],
  ['SVC_FORMAT_LOCALE', 'und', 'graph-lists'],
  ['SVC_FORMAT_LOCALE', 'x-private', 'graph-lists'],
  ['SVC_FORMAT_LOCALE', 'qaa', 'graph-lists'],
  ['SVC_FORMAT_LOCALE', 'en_GB', 'graph-lists'],
  ['SVC_GRAPH_OPERATIONS_PER_USER', '0', 'graph-limits'],
  ['SVC_GRAPH_OPERATIONS_PER_USER', '+5', 'graph-limits'],
  ['SVC_STREAMS_PER_USER', '5.0', 'graph-limits'],
  ['SVC_GRAPH_OPERATION_TIMEOUT', '60', 'graph-limits'],
  ['SVC_GRAPH_OPERATION_TIMEOUT', '1000h', 'graph-limits'],
  ['SVC_GRAPH_BODY_MAX_BYTES', '1MiB', 'graph-limits'],
  ['SVC_GRAPH_UPLOAD_MAX_BYTES', '6MB', 'graph-limits'],
  ['SVC_STREAM_LIFETIME', 'five minutes', 'graph-limits'],
  ['SVC_GRAPH_RETRY_AFTER', '0s', 'graph-limits'],
  ['SVC_GRAPH_ANONYMOUS_MAX_BYTES', '16k', 'graph-limits'],
  ['SVC_GRAPH_ANONYMOUS_MAX_TOKENS', '0x40', 'graph-limits'],
  ['SVC_GRAPH_ANONYMOUS_QUERY_MAX_BYTES', '0', 'graph-limits'],
  ['SVC_GRAPH_ANONYMOUS_ANSWER_MAX_BYTES', '1e4', 'graph-limits'],
  ['SVC_GRAPH_ANONYMOUS_PER_IP', ' 5', 'graph-limits'],
  ['SVC_GRAPH_ANONYMOUS_CEILING', 'many', 'graph-limits'],
  ['SVC_HTTP_READ_HEADER_TIMEOUT', '10', 'http'],
  ['SVC_HTTP_READ_HEADER_TIMEOUT', '1m', 'http'],
  ['SVC_HTTP_READ_TIMEOUT', '30 s', 'http'],
  ['SVC_HTTP_IDLE_TIMEOUT', '2min', 'http'],
  ['SVC_SHUTDOWN_GRACE', '0s', 'http'],
  ['SVC_SHUTDOWN_CANCEL_GRACE', '-5s', 'http'],
  ['SVC_SHUTDOWN_STOP_GRACE', '5', 'http'],
  ['SVC_WEBHOOK_ALLOWED_HOSTS', 'n8n', 'webhooks'],
  ['SVC_WEBHOOK_ALLOWED_HOSTS', '10.0.0.5', 'webhooks'],
  ['SVC_WEBHOOK_ALLOWED_HOSTS', 'n8n:99999', 'webhooks'],
  ['SVC_OUTBOUND_ALLOWED_HOSTS', 'cdn', 'webhooks'],
  ['SVC_OUTBOUND_ALLOWED_HOSTS', '10.0.0.5', 'webhooks'],
  ['SVC_CHAT_GRAPH_URL', 'ftp://graph.example.com', 'chat'],
  ['SVC_CHAT_GRAPH_URL', 'graph.facebook.com', 'chat'],
  ['SVC_CHAT_MEDIA_MAX_BYTES', '25MiB', 'chat'],
  ['SVC_CHAT_CREDENTIALS_KEY', 'zz'.repeat(32), 'chat'],
  ['SVC_CHAT_CREDENTIALS_KEY', 'ab'.repeat(16), 'chat'],
  ['SVC_EVENTS_RETENTION', '59m', 'housekeeping'],
  ['SVC_EVENTS_RETENTION', '7d', 'housekeeping'],
  ['SVC_EVENTS_RETENTION', '168', 'housekeeping'],
  ['SVC_FIELDS_ENTRIES_MAX', '0', 'fields'],
  ['SVC_FIELDS_ENTRIES_MAX', '2147483648', 'fields'],
  ['SVC_WORKERS', '0', 'workers'],
  ['SVC_WORKERS_PER_WORKSPACE', 'one', 'workers'],
  ['SVC_WORKER_WAIT', '10', 'workers'],
  ['SVC_WORKER_MEMORY_MAX', '512MiB', 'workers'],
  ['SVC_COMMAND_RECORD_TIMEOUT', '5', 'commands'],
  ['SVC_COMMAND_RECORDS_LIMIT', '0', 'commands'],
  ['SVC_TOKEN_TTL_DAYS', '106752', 'commands'],
  ['SVC_TOKEN_TTL_DAYS', 'never', 'commands'],
];

describe('refused values', () => {
  test.each(REFUSED)('%s=%j is refused in group %s', (name, text, group) => {
    const problems = problemsOf({ [name]: text });
    expect(problems.length).toBeGreaterThan(0);
    for (const problem of problems) {
      expect(problem).toMatchObject({ variable: name, group });
      expect(problem.message.startsWith(`${name} `)).toBe(true);
    }
  });

  test.each(REFUSED)('%s=%j falls back to the default', (name, text) => {
    const [, path, value] = DEFAULTS.find(([variable]) => variable === name) ?? [];
    expect(at(loadConfig({ [name]: text }).config, path ?? '')).toEqual(value);
  });

  test.each(REFUSED.filter(([name]) => !SECRET_VARIABLES.has(name)))(
    '%s=%j is quoted in its message',
    (name, text) => {
      const [problem] = problemsOf({ [name]: text });
      expect(problem?.message).toMatch(/\(got ".*"\)$/);
      expect(text).toContain(JSON.parse(problem?.message.match(/\(got (".*")\)$/)?.[1] ?? '""'));
    },
  );

  test('a trace sampler and its ratio are read with the endpoint, and refused by name', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    const sampled = { ...endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' };
    expect(
      loadConfig({ ...sampled, OTEL_TRACES_SAMPLER_ARG: '0.1' }).config.tracing?.sampler,
    ).toEqual({ name: 'parentbased_traceidratio', ratio: 0.1 });
    expect(problemsOf({ ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' })[0]?.message).toMatch(
      /^OTEL_TRACES_SAMPLER must be one of always_on, .* \(got "sometimes"\)$/,
    );
    expect(problemsOf({ ...sampled, OTEL_TRACES_SAMPLER_ARG: '2' })).toEqual([
      expect.objectContaining({ variable: 'OTEL_TRACES_SAMPLER_ARG', group: 'server' }),
    ]);
    expect(loadConfig({ ...sampled, OTEL_TRACES_SAMPLER_ARG: '2' }).config.tracing).toBeNull();
  });

  test('names the refused value, the rule and the variable in one sentence', () => {
    expect(problemsOf({ SVC_GRAPH_PAGE_CAP: '2000' })).toEqual([
      {
        variable: 'SVC_GRAPH_PAGE_CAP',
        group: 'graph-lists',
        message: 'SVC_GRAPH_PAGE_CAP must be a whole number from 1 to 1250 (got "2000")',
      },
    ]);
  });

  test('reports every refused value, not just the first', () => {
    const problems = problemsOf({
      SVC_ADDR: 'nowhere',
      SVC_INVITE_TTL: '7d',
      SVC_GRAPH_BODY_MAX_BYTES: '1MB',
      SVC_TOKEN_TTL_DAYS: '-1',
    });
    expect(problems.map((problem) => problem.variable)).toEqual([
      'SVC_ADDR',
      'SVC_INVITE_TTL',
      'SVC_GRAPH_BODY_MAX_BYTES',
      'SVC_TOKEN_TTL_DAYS',
    ]);
  });

  test('quotes only the refused entry of a list', () => {
    expect(problemsOf({ SVC_TRUSTED_PROXIES: '10.0.0.0/8, 192.168.0.1' })).toEqual([
      {
        variable: 'SVC_TRUSTED_PROXIES',
        group: 'server',
        message:
          'SVC_TRUSTED_PROXIES must list CIDR ranges such as 10.0.0.5/32, not bare addresses (got "192.168.0.1")',
      },
    ]);
  });

  test('a wildcard CORS origin is named, says why, and stops serve', () => {
    const problems = problemsOf({ SVC_CORS_ORIGINS: 'https://app.example.com, *' });
    expect(problems).toEqual([
      {
        variable: 'SVC_CORS_ORIGINS',
        group: 'server',
        message:
          'SVC_CORS_ORIGINS must list exact origins; * is refused because the session cookie is sent (got "*")',
      },
    ]);
    expect(problemsStoppingServe(problems)).toEqual(problems);
  });

  test('names a host name without a port in the webhook allow list', () => {
    expect(problemsOf({ SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32, n8n' })).toEqual([
      {
        variable: 'SVC_WEBHOOK_ALLOWED_HOSTS',
        group: 'webhooks',
        message:
          'SVC_WEBHOOK_ALLOWED_HOSTS must give each host name a port, such as n8n:5678 (got "n8n")',
      },
    ]);
  });
});

describe('secrets', () => {
  test.each([
    ['SVC_DATABASE_URL', 'postgres://crm:hunter2@@db/crm'],
    ['SVC_DATABASE_URL', 'postgres://crm:hunter2%zz@db/crm'],
    ['SVC_DATABASE_URL', 'hunter2'],
    ['SVC_CHAT_CREDENTIALS_KEY', 'hunter2'],
    ['SVC_CHAT_CREDENTIALS_KEY', `${'0'.repeat(60)}hunter2`],
  ])('%s is never quoted in its message', (name, text) => {
    const problems = problemsOf({ [name]: text });
    expect(problems).toHaveLength(1);
    expect(problems[0]?.message).not.toContain('hunter2');
    expect(problems[0]?.message).not.toContain('(got');
  });

  test('the SMTP password is never quoted, even when refused without a host', () => {
    const message = formatProblems(problemsOf({ SVC_SMTP_PASSWORD: 'hunter2' }));
    expect(message).toBe('- SVC_SMTP_PASSWORD is set but SVC_SMTP_HOST is not');
  });

  test('a DB URL with a bare @ in the password is refused without echoing it', () => {
    expect(problemsOf({ SVC_DATABASE_URL: 'postgres://crm:p@ss@db:5432/crm' })).toEqual([
      {
        variable: 'SVC_DATABASE_URL',
        group: 'server',
        message: 'SVC_DATABASE_URL has a bare @ in the user or password; write it as %40',
      },
    ]);
  });

  test('a DB URL with the @ percent-encoded as %40 is accepted', () => {
    const { config, problems } = loadConfig({
      SVC_DATABASE_URL: 'postgres://crm:p%40ss@db:5432/crm',
    });
    expect(problems).toEqual([]);
    expect(requireDatabaseUrl(config)).toBe('postgres://crm:p%40ss@db:5432/crm');
  });
});

describe('trusted proxies and webhook hosts', () => {
  test('an IPv4-mapped proxy range counts as the IPv4 range it covers', () => {
    const { config } = loadConfig({ SVC_TRUSTED_PROXIES: '::ffff:10.0.0.0/104' });
    expect(config.server.trustedProxies).toEqual([
      { text: '10.0.0.0/8', family: 4, bytes: Uint8Array.from([10, 0, 0, 0]), prefix: 8 },
    ]);
  });

  test('an IPv4-mapped proxy range shorter than /96 stops serve', () => {
    const problems = problemsOf({ SVC_TRUSTED_PROXIES: '::ffff:0:0/80' });
    expect(problemsStoppingServe(problems)).toHaveLength(1);
    expect(problems[0]?.message).toBe(
      'SVC_TRUSTED_PROXIES must not list an IPv4-mapped range shorter than /96 (got "::ffff:0:0/80")',
    );
  });

  test('proxy ranges are read with spaces around the commas and host bits masked', () => {
    const { config } = loadConfig({ SVC_TRUSTED_PROXIES: '10.1.2.3/8 , 2001:db8::1/32' });
    expect(config.server.trustedProxies.map((range) => range.text)).toEqual([
      '10.0.0.0/8',
      '2001:db8::/32',
    ]);
  });

  test('webhook entries split into ranges and host:port pairs', () => {
    const { config } = loadConfig({
      SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32, host:5678, [::1]:8080, fd00::/8',
    });
    expect(config.webhooks.allowedCidrs.map((range) => range.text)).toEqual([
      '127.0.0.1/32',
      'fd00::/8',
    ]);
    expect(config.webhooks.allowedHostPorts).toEqual([
      { host: 'host', port: 5678 },
      { host: '::1', port: 8080 },
    ]);
  });

  test('an operator-set SVC_CHAT_GRAPH_URL joins the outbound list as host:port; the default does not', () => {
    const { config } = loadConfig({
      SVC_OUTBOUND_ALLOWED_HOSTS: 'cdn:8443',
      SVC_CHAT_GRAPH_URL: 'http://[::1]:9000/v23.0',
    });
    expect(config.outbound.allowedHostPorts).toEqual([
      { host: 'cdn', port: 8443 },
      { host: '::1', port: 9000 },
    ]);
    expect(loadConfig({ SVC_CHAT_GRAPH_URL: 'https://graph.example/v1' }).config.outbound).toEqual({
      allowedCidrs: [],
      allowedHostPorts: [{ host: 'graph.example', port: 443 }],
    });
    expect(loadConfig({}).config.outbound.allowedHostPorts).toEqual([]);
    expect(loadConfig({ SVC_CHAT_GRAPH_URL: 'ftp://x' }).config.outbound.allowedHostPorts).toEqual(
      [],
    );
  });
});

const MAIL: Env = {
  SVC_SMTP_HOST: 'smtp.example.com',
  SVC_SMTP_FROM: 'crm@example.com',
  SVC_PUBLIC_URL: 'https://crm.example.com/',
};

describe('mail', () => {
  test.each([
    ['SVC_SMTP_PORT', '25'],
    ['SVC_SMTP_USERNAME', 'crm'],
    ['SVC_SMTP_PASSWORD', 'secret'],
    ['SVC_SMTP_FROM', 'crm@example.com'],
    ['SVC_SMTP_TLS', 'none'],
  ])('%s set without SVC_SMTP_HOST is refused', (name, text) => {
    const { config, problems } = loadConfig({ [name]: text });
    expect(config.mail).toBeNull();
    expect(problems).toEqual([
      { variable: name, group: 'mail', message: `${name} is set but SVC_SMTP_HOST is not` },
    ]);
  });

  test('every SMTP setting without a host is named, each once', () => {
    const problems = problemsOf({
      SVC_SMTP_PORT: '25',
      SVC_SMTP_USERNAME: 'crm',
      SVC_SMTP_PASSWORD: 'secret',
      SVC_SMTP_FROM: 'crm@example.com',
      SVC_SMTP_TLS: 'none',
    });
    expect(problems.map((problem) => problem.message)).toEqual([
      'SVC_SMTP_PORT is set but SVC_SMTP_HOST is not',
      'SVC_SMTP_USERNAME is set but SVC_SMTP_HOST is not',
      'SVC_SMTP_PASSWORD is set but SVC_SMTP_HOST is not',
      'SVC_SMTP_FROM is set but SVC_SMTP_HOST is not',
      'SVC_SMTP_TLS is set but SVC_SMTP_HOST is not',
    ]);
  });

  test.each([
    ['SVC_PUBLIC_URL', 'not a url'],
    ['SVC_MAIL_TEMPLATE_DIR', '/no/such/dir'],
  ])('%s is ignored without SVC_SMTP_HOST', (name, text) => {
    const { config, problems } = loadConfig({ [name]: text });
    expect(problems).toEqual([]);
    expect(config.mail).toBeNull();
  });

  test('a host with a sender and a public URL gives the defaults of the rest', () => {
    expect(loadConfig(MAIL)).toEqual({
      config: expect.objectContaining({
        mail: {
          host: 'smtp.example.com',
          port: 587,
          username: null,
          password: null,
          from: 'crm@example.com',
          tls: 'mandatory',
          publicUrl: 'https://crm.example.com',
          templateDir: null,
        },
      }),
      problems: [],
    });
  });

  test.each([
    [{ SVC_SMTP_PORT: '2525' }, { port: 2525 }],
    [{ SVC_SMTP_PORT: '65535' }, { port: 65535 }],
    [{ SVC_SMTP_TLS: 'opportunistic' }, { tls: 'opportunistic' }],
    [{ SVC_SMTP_TLS: 'none' }, { tls: 'none' }],
    [
      { SVC_SMTP_USERNAME: 'crm', SVC_SMTP_PASSWORD: 's3cret' },
      { username: 'crm', password: 's3cret' },
    ],
    [
      { SVC_SMTP_USERNAME: 'crm', SVC_SMTP_PASSWORD: 's3cret', SVC_SMTP_TLS: 'mandatory' },
      { tls: 'mandatory', username: 'crm' },
    ],
    [{ SVC_PUBLIC_URL: 'http://localhost:8080' }, { publicUrl: 'http://localhost:8080' }],
    [{ SVC_MAIL_TEMPLATE_DIR: tempDir }, { templateDir: tempDir }],
    [{ SVC_SMTP_HOST: '10.0.0.25' }, { host: '10.0.0.25' }],
  ])('with a host, %j is accepted', (extra, expected) => {
    const { config, problems } = loadConfig({ ...MAIL, ...extra });
    expect(problems).toEqual([]);
    expect(config.mail).toMatchObject(expected);
  });

  test.each([
    [{ SVC_SMTP_FROM: '' }, 'SVC_SMTP_FROM is required when SVC_SMTP_HOST is set'],
    [{ SVC_PUBLIC_URL: '' }, 'SVC_PUBLIC_URL is required when SVC_SMTP_HOST is set'],
    [
      { SVC_SMTP_FROM: 'not-an-address' },
      'SVC_SMTP_FROM must be an email address such as crm@example.com (got "not-an-address")',
    ],
    [
      { SVC_SMTP_FROM: 'CRM <crm@example.com>' },
      'SVC_SMTP_FROM must be an email address such as crm@example.com (got "CRM <crm@example.com>")',
    ],
    [
      { SVC_PUBLIC_URL: 'https://crm.example.com/app' },
      'SVC_PUBLIC_URL must be a site root with no path, query, fragment or user name (got "https://crm.example.com/app")',
    ],
    [
      { SVC_PUBLIC_URL: 'ftp://crm.example.com' },
      'SVC_PUBLIC_URL must be an http or https address such as https://crm.example.com (got "ftp://crm.example.com")',
    ],
    [
      { SVC_SMTP_HOST: 'smtp.example.com:587' },
      'SVC_SMTP_HOST must be a host name without a port; set the port in SVC_SMTP_PORT (got "smtp.example.com:587")',
    ],
    [
      { SVC_SMTP_HOST: 'smtp example' },
      'SVC_SMTP_HOST must be a host name or an IP address (got "smtp example")',
    ],
  ])('with a host, %j turns mail off and is refused', (extra, message) => {
    const { config, problems } = loadConfig({ ...MAIL, ...extra });
    expect(config.mail).toBeNull();
    expect(problems.map((problem) => problem.message)).toEqual([message]);
    expect(problems[0]?.group).toBe('mail');
  });

  test.each([
    [
      { SVC_SMTP_PORT: '0' },
      'SVC_SMTP_PORT must be a whole number from 1 to 65535 (got "0")',
      { port: 587 },
    ],
    [
      { SVC_SMTP_PORT: 'smtp' },
      'SVC_SMTP_PORT must be a whole number from 1 to 65535 (got "smtp")',
      { port: 587 },
    ],
    [
      { SVC_SMTP_TLS: 'starttls' },
      'SVC_SMTP_TLS must be mandatory, opportunistic or none (got "starttls")',
      { tls: 'mandatory' },
    ],
    [
      { SVC_SMTP_USERNAME: 'crm' },
      'SVC_SMTP_PASSWORD must be set with SVC_SMTP_USERNAME: set both or neither',
      { username: null, password: null },
    ],
    [
      { SVC_SMTP_PASSWORD: 'hunter2' },
      'SVC_SMTP_USERNAME must be set with SVC_SMTP_PASSWORD: set both or neither',
      { username: null, password: null },
    ],
    [
      { SVC_SMTP_USERNAME: 'crm', SVC_SMTP_PASSWORD: 'hunter2', SVC_SMTP_TLS: 'opportunistic' },
      'SVC_SMTP_TLS must be mandatory when SVC_SMTP_USERNAME and SVC_SMTP_PASSWORD are set (got "opportunistic")',
      { tls: 'mandatory', username: 'crm' },
    ],
    [
      { SVC_SMTP_USERNAME: 'crm', SVC_SMTP_PASSWORD: 'hunter2', SVC_SMTP_TLS: 'none' },
      'SVC_SMTP_TLS must be mandatory when SVC_SMTP_USERNAME and SVC_SMTP_PASSWORD are set (got "none")',
      { tls: 'mandatory' },
    ],
    [
      { SVC_MAIL_TEMPLATE_DIR: join(tempDir, 'missing') },
      `SVC_MAIL_TEMPLATE_DIR must name an existing directory (got ${JSON.stringify(join(tempDir, 'missing'))})`,
      { templateDir: null },
    ],
  ])('with a host, %j is refused and falls back', (extra, message, fallback) => {
    const { config, problems } = loadConfig({ ...MAIL, ...extra });
    expect(problems.map((problem) => problem.message)).toEqual([message]);
    expect(config.mail).toMatchObject(fallback);
    expect(message).not.toContain('hunter2');
  });

  test('a template path naming a file, not a directory, is refused', () => {
    const file = join(tempDir, 'invite.tmpl');
    writeFileSync(file, 'hello');
    const problems = problemsOf({ ...MAIL, SVC_MAIL_TEMPLATE_DIR: file });
    expect(problems.map((problem) => problem.variable)).toEqual(['SVC_MAIL_TEMPLATE_DIR']);
  });
});

describe('page sizes', () => {
  test('a page size equal to the cap is accepted', () => {
    const { config, problems } = loadConfig({
      SVC_GRAPH_PAGE_SIZE: '100',
      SVC_GRAPH_PAGE_CAP: '100',
      SVC_LIST_PAGE_SIZES: '10,20,100',
    });
    expect(problems).toEqual([]);
    expect(config.graph).toMatchObject({
      pageSize: 100,
      pageCap: 100,
      listPageSizes: [10, 20, 100],
    });
  });

  test('a page size above the cap is refused and falls back to the default', () => {
    const { config, problems } = loadConfig({ SVC_GRAPH_PAGE_SIZE: '300' });
    expect(problems.map((problem) => problem.message)).toEqual([
      'SVC_GRAPH_PAGE_SIZE must not be above SVC_GRAPH_PAGE_CAP, which is 200 (got "300")',
    ]);
    expect(config.graph.pageSize).toBe(50);
  });

  test('a cap lowered below the default page size asks for the page size too', () => {
    const problems = problemsOf({ SVC_GRAPH_PAGE_CAP: '40', SVC_LIST_PAGE_SIZES: '10,20' });
    expect(problems.map((problem) => problem.message)).toEqual([
      'SVC_GRAPH_PAGE_SIZE must not be above SVC_GRAPH_PAGE_CAP, which is 40; set it, since its default 50 breaks this',
    ]);
  });

  test('a list size above the cap is refused', () => {
    const { config, problems } = loadConfig({
      SVC_GRAPH_PAGE_CAP: '60',
      SVC_GRAPH_PAGE_SIZE: '50',
    });
    expect(problems.map((problem) => problem.message)).toEqual([
      'SVC_LIST_PAGE_SIZES must not list a size above SVC_GRAPH_PAGE_CAP, which is 60; set it, since its default 10,20,50,100 breaks this',
    ]);
    expect(config.graph.listPageSizes).toEqual([10, 20, 50]);
  });

  test('a list page size missing from the list is refused and falls back into the list', () => {
    const { config, problems } = loadConfig({
      SVC_LIST_PAGE_SIZES: '25,75',
      SVC_LIST_PAGE_SIZE: '30',
    });
    expect(problems.map((problem) => problem.message)).toEqual([
      'SVC_LIST_PAGE_SIZE must be one of SVC_LIST_PAGE_SIZES, which are 25, 75 (got "30")',
    ]);
    expect(config.graph.listPageSize).toBe(25);
  });

  test('a list without the default page size asks for the page size too', () => {
    expect(problemsOf({ SVC_LIST_PAGE_SIZES: '25,75' }).map((problem) => problem.variable)).toEqual(
      ['SVC_LIST_PAGE_SIZE'],
    );
  });

  test('a refused cap gives one problem, not one per variable tied to it', () => {
    const problems = problemsOf({
      SVC_GRAPH_PAGE_CAP: 'lots',
      SVC_GRAPH_PAGE_SIZE: '300',
      SVC_LIST_PAGE_SIZES: '10,500',
    });
    expect(problems.map((problem) => problem.variable)).toEqual(['SVC_GRAPH_PAGE_CAP']);
  });

  test('a refused list gives one problem, not one for the page size too', () => {
    const problems = problemsOf({ SVC_LIST_PAGE_SIZES: '30,30', SVC_LIST_PAGE_SIZE: '30' });
    expect(problems.map((problem) => problem.variable)).toEqual(['SVC_LIST_PAGE_SIZES']);
  });

  test('values clamped after a refusal still satisfy every page-size rule', () => {
    const { graph } = loadConfig({ SVC_GRAPH_PAGE_CAP: '5', SVC_GRAPH_PAGE_SIZE: '6' }).config;
    expect(graph.pageSize).toBeLessThanOrEqual(graph.pageCap);
    expect(graph.listPageSizes.every((size) => size <= graph.pageCap)).toBe(true);
    expect(graph.listPageSizes).toContain(graph.listPageSize);
  });
});

describe('http timeouts', () => {
  test('a header timeout equal to the read timeout is accepted', () => {
    expect(problemsOf({ SVC_HTTP_READ_HEADER_TIMEOUT: '30s' })).toEqual([]);
  });

  test('a read timeout below the default header timeout asks for the header timeout too', () => {
    const { config, problems } = loadConfig({ SVC_HTTP_READ_TIMEOUT: '5s' });
    expect(problems.map((problem) => problem.message)).toEqual([
      'SVC_HTTP_READ_HEADER_TIMEOUT must not be above SVC_HTTP_READ_TIMEOUT, which is 5000ms; set it, since its default 10s breaks this',
    ]);
    expect(config.http.readHeaderTimeoutMs).toBe(5000);
  });
});

describe('which problems stop which commands', () => {
  const problems = problemsOf({
    SVC_ADDR: 'x',
    SVC_SMTP_PORT: '25',
    SVC_INVITE_TTL: 'x',
    SVC_TENANTS_HELD: 'x',
    SVC_GRAPH_PAGE_CAP: 'x',
    SVC_GRAPH_RETRY_AFTER: 'x',
    SVC_SHUTDOWN_GRACE: 'x',
    SVC_SHUTDOWN_STOP_GRACE: 'x',
    SVC_WEBHOOK_ALLOWED_HOSTS: 'x',
    SVC_CHAT_MEDIA_MAX_BYTES: 'x',
    SVC_FIELDS_ENTRIES_MAX: 'x',
    SVC_COMMAND_RECORD_TIMEOUT: 'x',
    SVC_COMMAND_RECORDS_LIMIT: 'x',
    SVC_TOKEN_TTL_DAYS: 'x',
  });
  const names = (list: ConfigProblem[]) => list.map((problem) => problem.variable).sort();

  test('every refused value stops serve except the command records ones', () => {
    expect(names(problemsStoppingServe(problems))).toEqual(
      [
        'SVC_ADDR',
        'SVC_SMTP_PORT',
        'SVC_INVITE_TTL',
        'SVC_TENANTS_HELD',
        'SVC_GRAPH_PAGE_CAP',
        'SVC_GRAPH_RETRY_AFTER',
        'SVC_SHUTDOWN_GRACE',
        'SVC_SHUTDOWN_STOP_GRACE',
        'SVC_WEBHOOK_ALLOWED_HOSTS',
        'SVC_CHAT_MEDIA_MAX_BYTES',
        'SVC_FIELDS_ENTRIES_MAX',
      ].sort(),
    );
  });

  test('mail, workspaces, webhooks, fields, chat and the stop grace stop plugin commands', () => {
    expect(names(problemsStoppingPluginCommands(problems))).toEqual(
      [
        'SVC_SMTP_PORT',
        'SVC_TENANTS_HELD',
        'SVC_SHUTDOWN_STOP_GRACE',
        'SVC_WEBHOOK_ALLOWED_HOSTS',
        'SVC_CHAT_MEDIA_MAX_BYTES',
        'SVC_FIELDS_ENTRIES_MAX',
      ].sort(),
    );
  });

  test('the command records problems are set apart for each command to judge', () => {
    expect(names(commandRecordProblems(problems))).toEqual([
      'SVC_COMMAND_RECORDS_LIMIT',
      'SVC_COMMAND_RECORD_TIMEOUT',
      'SVC_TOKEN_TTL_DAYS',
    ]);
  });
});

describe('the loaded config', () => {
  test('is frozen all the way down', () => {
    const { config } = loadConfig({ SVC_TRUSTED_PROXIES: '10.0.0.0/8', ...MAIL });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.graph.anonymous)).toBe(true);
    expect(Object.isFrozen(config.graph.listPageSizes)).toBe(true);
    expect(Object.isFrozen(config.server.trustedProxies[0])).toBe(true);
    expect(Object.isFrozen(config.mail)).toBe(true);
  });

  test('keeps the chat key as a buffer of 32 bytes', () => {
    const { config } = loadConfig({ SVC_CHAT_CREDENTIALS_KEY: KEY });
    expect(Buffer.isBuffer(config.chat.credentialsKey)).toBe(true);
    expect(config.chat.credentialsKey?.length).toBe(32);
  });

  test('does not read process.env', () => {
    process.env.SVC_GRAPH_PAGE_CAP = '7';
    try {
      expect(loadConfig({}).config.graph.pageCap).toBe(200);
    } finally {
      delete process.env.SVC_GRAPH_PAGE_CAP;
    }
  });
});

describe('requireDatabaseUrl', () => {
  test('throws an error naming SVC_DATABASE_URL when it is unset', () => {
    expect(() => requireDatabaseUrl(loadConfig({}).config)).toThrow(/^SVC_DATABASE_URL is not set/);
  });

  test('an unset database URL is no problem for loadConfig itself', () => {
    expect(problemsOf({ SVC_DATABASE_URL: '' })).toEqual([]);
  });
});

describe('formatProblems', () => {
  test('writes one problem a line', () => {
    const problems = problemsOf({ SVC_ADDR: 'x', SVC_SMTP_TLS: 'none' });
    expect(formatProblems(problems)).toBe(
      '- SVC_ADDR must be a host and a port such as localhost:8080 ([::1]:8080 for IPv6) (got "x")\n' +
        '- SVC_SMTP_TLS is set but SVC_SMTP_HOST is not',
    );
  });

  test('writes nothing for no problems', () => {
    expect(formatProblems([])).toBe('');
  });
});
