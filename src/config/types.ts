// The shape of the configuration: what loadConfig (src/config.ts) returns and what the
// parsers in this folder produce. Types only, so every file may import them without a cycle.

export type Env = Record<string, string | undefined>;

/** A CIDR range, kept as text and as parsed bytes for matching. */
export interface CidrRange {
  /** As written by the operator, normalised (`127.0.0.1/32`, `::ffff:10.0.0.0/104` -> `10.0.0.0/8`). */
  text: string;
  /** Address family after unmapping IPv4-mapped ranges. */
  family: 4 | 6;
  /** Network address bytes (4 or 16). */
  bytes: Uint8Array;
  prefix: number;
}

export interface HostPort {
  /**
   * Lowercased name or IP address; IPv6 without brackets (`::1`). Empty only in SVC_ADDR
   * `:8080`, meaning every interface: pass `undefined` as listen's host, so Node binds
   * `::` or, without IPv6, `0.0.0.0`.
   */
  host: string;
  port: number;
}

export type SmtpTls = 'mandatory' | 'opportunistic' | 'none';

export interface MailConfig {
  host: string;
  port: number;
  /** Both set or both null. */
  username: string | null;
  password: string | null;
  from: string;
  tls: SmtpTls;
  /** `http(s)://host[:port]`, no trailing slash. */
  publicUrl: string;
  templateDir: string | null;
}

/** SVC_WEBHOOK_ALLOWED_HOSTS: its CIDR entries and its host:port entries. */
export interface WebhookAllowList {
  allowedCidrs: CidrRange[];
  allowedHostPorts: HostPort[];
}

export interface Config {
  server: {
    /** Null when unset: `serve` refuses to start, `dev` starts an embedded database. */
    databaseUrl: string | null;
    /**
     * SVC_DATABASE_REPLICA_URLS: read replicas for reads that tolerate staleness
     * (docs/scaling.md); empty: every statement goes to `databaseUrl`.
     */
    replicaUrls: string[];
    /** SVC_DATABASE_REPLICA_MAX_LAG: a replica further behind than this serves nothing. */
    replicaMaxLagMs: number;
    addr: HostPort;
    webDir: string | null;
    trustedProxies: CidrRange[];
    /**
     * SVC_CORS_ORIGINS, canonical (`https://app.example.com`): other origins whose pages
     * may use the graph with the session cookie. Empty: no CORS answers at all.
     */
    corsOrigins: string[];
    devGraphiql: boolean;
    /** SVC_DEV_POSTGRES_PORT: where `svc dev`'s embedded PostgreSQL listens; null: a free port. */
    devPostgresPort: number | null;
    /** SVC_METRICS_ADDR: where `GET /metrics` is served, apart from `addr`; null: no metrics listener. */
    metricsAddr: HostPort | null;
    /** SVC_LOG_LEVEL: the quietest level written (`debug` shows each refused operation). */
    logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  };
  /**
   * OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT and the other standard variables,
   * docs/operations.md); null: off.
   */
  tracing: {
    /** Where spans are POSTed as OTLP/HTTP JSON. */
    endpoint: string;
    headers: Record<string, string>;
    serviceName: string;
    /** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (the ratio of the ratio samplers). */
    sampler: { name: string; ratio: number };
  } | null;
  /** Null without SVC_SMTP_HOST: no mail is sent. */
  mail: MailConfig | null;
  invitations: {
    inviteTtlMs: number;
    resetTtlMs: number;
    resetAttempts: number;
    resetLinks: number;
    resetCooldownMs: number;
  };
  workspaces: {
    /** 0 stops recording at once. */
    machineGraceMs: number;
    held: number;
    refreshMs: number;
  };
  graph: {
    pageSize: number;
    pageCap: number;
    toastMs: number;
    listPageSizes: number[];
    listPageSize: number;
    formatLocale: string;
    operationsPerUser: number;
    streamsPerUser: number;
    operationTimeoutMs: number;
    bodyMaxBytes: number;
    uploadMaxBytes: number;
    streamLifetimeMs: number;
    retryAfterMs: number;
    anonymous: {
      maxBytes: number;
      maxTokens: number;
      queryMaxBytes: number;
      answerMaxBytes: number;
      perIp: number;
      ceiling: number;
    };
  };
  http: {
    readHeaderTimeoutMs: number;
    readTimeoutMs: number;
    idleTimeoutMs: number;
    shutdownGraceMs: number;
    shutdownCancelGraceMs: number;
    shutdownStopGraceMs: number;
  };
  webhooks: WebhookAllowList;
  /**
   * SVC_OUTBOUND_ALLOWED_HOSTS, what plugins' outbound requests may reach although internal;
   * the host and port of an operator-set SVC_CHAT_GRAPH_URL count as a host:port entry.
   */
  outbound: WebhookAllowList;
  chat: {
    verifyToken: string | null;
    appSecret: string | null;
    accessToken: string | null;
    phoneNumberId: string | null;
    graphUrl: string;
    mediaMaxBytes: number;
    /** 32 bytes, or null when unset. */
    credentialsKey: Buffer | null;
  };
  jobs: {
    /** Background jobs of one kind in flight at once per process (a kind may ask fewer). */
    concurrency: number;
  };
  housekeeping: {
    /**
     * SVC_EVENTS_RETENTION: an event no pending delivery needs, and a settled delivery
     * counted from its last attempt, are removed this long after.
     */
    eventsRetentionMs: number;
  };
  fields: {
    entriesMax: number;
  };
  /** Worker processes that parse untrusted input (src/workers/run.ts, docs/limits.md). */
  workers: {
    /** SVC_WORKERS: workers running at once in one process. */
    processes: number;
    /** SVC_WORKERS_PER_WORKSPACE: workers running at once for one workspace. */
    perWorkspace: number;
    /** SVC_WORKER_WAIT: longest a call waits for a worker before it is refused. */
    waitMs: number;
    /** SVC_WORKER_MEMORY_MAX: most memory one worker may hold, in bytes. */
    memoryMaxBytes: number;
  };
  /** Read only by commands; `serve` ignores them (SPEC 8.2 "Command records"). */
  commands: {
    recordTimeoutMs: number;
    recordsLimit: number;
    tokenTtlDays: number;
  };
}

/** The groups of SPEC 8.2, used to decide which commands a refused value stops. */
export type ConfigGroup =
  | 'server'
  | 'mail'
  | 'invitations'
  | 'workspaces'
  | 'graph-lists'
  | 'graph-limits'
  | 'http'
  | 'webhooks'
  | 'chat'
  | 'jobs'
  | 'housekeeping'
  | 'fields'
  | 'workers'
  | 'commands';

export interface ConfigProblem {
  variable: string;
  group: ConfigGroup;
  /** A full sentence naming the variable, never echoing a secret. */
  message: string;
}

export interface LoadedConfig {
  /** Every value; a refused one falls back to its default (or null) so commands that ignore it can run. */
  config: Config;
  problems: ConfigProblem[];
}
