// Configuration types. The parser (loadConfig) is implemented below the types; the
// helpers parsing each kind of value live in src/config/.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import {
  readChat,
  readCommands,
  readFields,
  readGraphLimits,
  readHttp,
  readInvitations,
  readServer,
  readWebhooks,
  readWorkspaces,
} from './config/groups.js';
import { readGraphLists } from './config/graph-lists.js';
import { readMail } from './config/mail.js';
import { EnvReader } from './config/reader.js';

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

export interface Config {
  server: {
    /** Null when unset: `serve` refuses to start, `dev` starts an embedded database. */
    databaseUrl: string | null;
    addr: HostPort;
    webDir: string | null;
    trustedProxies: CidrRange[];
    /**
     * SVC_CORS_ORIGINS, canonical (`https://app.example.com`): other origins whose pages
     * may use the graph with the session cookie. Empty: no CORS answers at all.
     */
    corsOrigins: string[];
    devGraphiql: boolean;
  };
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
  webhooks: {
    allowedCidrs: CidrRange[];
    allowedHostPorts: HostPort[];
  };
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
  fields: {
    entriesMax: number;
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
  | 'fields'
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

/**
 * Parses every SVC_ variable of SPEC 2.6, 2.7, 8.1 and 8.2. Never throws on a bad value:
 * each one becomes a problem and falls back to its default (or null), so a command that
 * ignores its group can still run. The caller decides which problems stop it.
 */
export function loadConfig(env: Env): LoadedConfig {
  const reader = new EnvReader(env);
  const config: Config = {
    server: readServer(reader),
    mail: readMail(reader),
    invitations: readInvitations(reader),
    workspaces: readWorkspaces(reader),
    graph: { ...readGraphLists(reader), ...readGraphLimits(reader) },
    http: readHttp(reader),
    webhooks: readWebhooks(reader),
    chat: readChat(reader),
    fields: readFields(reader),
    commands: readCommands(reader),
  };
  return { config: deepFreeze(config), problems: reader.problems };
}

/**
 * Freezes objects and arrays all the way down. Buffers and the bytes of CIDR ranges stay
 * writable: JavaScript refuses to freeze a typed array that has elements.
 */
function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return value;
  for (const child of Object.values(value)) deepFreeze(child);
  return Object.freeze(value);
}

/**
 * Reads `<cwd>/.env`, if there is one, under the variables of `env`. A variable present
 * in `env` wins even when empty (as dotenv and Node's --env-file do), so an operator can
 * blank out a file value; the empty string then counts as unset. A missing file is no
 * error; an unreadable one throws, since the operator meant it to be read.
 */
export function loadEnvFile(cwd: string, env: Env): Env {
  const path = join(cwd, '.env');
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ...env };
    throw new Error(`cannot read ${path}: ${(error as Error).message}`, { cause: error });
  }
  const merged: Env = { ...parseEnv(content) };
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined) merged[name] = value;
  }
  return merged;
}

/**
 * The one place that reads process.env (lint allows it in this file only): the real
 * environment over `<cwd>/.env`, parsed. Everything else takes an `Env` or a `Config`.
 */
export function loadProcessConfig(cwd: string): LoadedConfig {
  return loadConfig(loadEnvFile(cwd, process.env));
}

/** One problem a line, in the order the variables are read, for `svc check` and startup. */
export function formatProblems(problems: ConfigProblem[]): string {
  return problems.map((problem) => `- ${problem.message}`).join('\n');
}

/** SPEC 8.2: every refused value stops serve, except the three Command records ones. */
export function problemsStoppingServe(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.filter((problem) => problem.group !== 'commands');
}

const PLUGIN_COMMAND_GROUPS: ReadonlySet<ConfigGroup> = new Set([
  'mail',
  'workspaces',
  'webhooks',
  'fields',
  'chat',
]);

/**
 * SPEC 8.2: problems that stop account commands taking `-as` before they change anything,
 * and `migrate`, `seed -yes`, `account:create-admin` after their migrations: refused
 * values under Mail, Workspaces, Webhooks, Fields plugin, Chat plugin, and
 * SVC_SHUTDOWN_STOP_GRACE (these commands start the plugins).
 */
export function problemsStoppingPluginCommands(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.filter(
    (problem) =>
      PLUGIN_COMMAND_GROUPS.has(problem.group) || problem.variable === 'SVC_SHUTDOWN_STOP_GRACE',
  );
}

/** Problems with the Command records variables, which each command judges for itself. */
export function commandRecordProblems(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.filter((problem) => problem.group === 'commands');
}

/** The database URL, for commands that need one; `serve` stops here when it is unset. */
export function requireDatabaseUrl(config: Config): string {
  if (config.server.databaseUrl !== null) return config.server.databaseUrl;
  throw new Error(
    'SVC_DATABASE_URL is not set; set it to a connection string such as postgres://user:password@host:5432/db',
  );
}
