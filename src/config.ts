// The configuration's assembly point: loadConfig reads every group with the readers in
// src/config/ and freezes the result. The types live in src/config/types.ts and are
// re-exported here, since every domain takes a Config.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import {
  readChat,
  readHousekeeping,
  readJobs,
  readCommands,
  readFields,
  readGraphLimits,
  readHttp,
  readInvitations,
  readOutbound,
  readServer,
  readWebhooks,
  readWorkers,
  readWorkspaces,
} from './config/groups.js';
import { readGraphLists } from './config/graph-lists.js';
import { readMail } from './config/mail.js';
import { readTracing } from './config/tracing.js';
import { EnvReader } from './config/reader.js';
import type { Config, Env, LoadedConfig } from './config/types.js';

export type {
  CidrRange,
  Config,
  ConfigGroup,
  ConfigProblem,
  Env,
  HostPort,
  LoadedConfig,
  MailConfig,
  SmtpTls,
  WebhookAllowList,
} from './config/types.js';

/**
 * Parses every SVC_ variable of SPEC 2.6, 2.7, 8.1 and 8.2. Never throws on a bad value:
 * each one becomes a problem and falls back to its default (or null), so a command that
 * ignores its group can still run. The caller decides which problems stop it.
 */
export function loadConfig(env: Env): LoadedConfig {
  const reader = new EnvReader(env);
  const read: Omit<Config, 'outbound'> = {
    server: readServer(reader),
    tracing: readTracing(reader),
    mail: readMail(reader),
    invitations: readInvitations(reader),
    workspaces: readWorkspaces(reader),
    graph: { ...readGraphLists(reader), ...readGraphLimits(reader) },
    http: readHttp(reader),
    webhooks: readWebhooks(reader),
    chat: readChat(reader),
    jobs: readJobs(reader),
    housekeeping: readHousekeeping(reader),
    fields: readFields(reader),
    workers: readWorkers(reader),
    commands: readCommands(reader),
  };
  // Read after the chat group: an operator-set SVC_CHAT_GRAPH_URL joins its list.
  const config: Config = { ...read, outbound: readOutbound(reader, read.chat) };
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
 * The one place that reads process.env (lint allows it only here and under src/config/):
 * the real environment over `<cwd>/.env`, parsed. Everything else takes an `Env` or a
 * `Config`.
 */
export function loadProcessConfig(cwd: string): LoadedConfig {
  return loadConfig(loadEnvFile(cwd, process.env));
}
