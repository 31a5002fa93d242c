import type { LoadedConfig } from '../config.js';
import {
  DEV_DATA_DIR,
  embeddedDatabaseDir,
  embeddedUrl,
  EmbeddedDatabaseBusy,
  hasEmbeddedDatabase,
  runningEmbeddedCluster,
  startEmbeddedPostgres,
} from '../dev/embedded-postgres.js';
import { silentLogger } from '../log.js';
import { DATABASE_URL_REQUIRED, stopOn } from './config.js';
import { CommandError } from './errors.js';

// Where a command's database comes from: SVC_DATABASE_URL, else the embedded cluster
// `svc dev` (npm start) made in the folder the command runs in. `serve` and `check`
// never fall back: production needs its database named.

/** Said by the help of every command that uses a database. */
export const DATABASE_HELP =
  'The database is the one SVC_DATABASE_URL names. When it is unset, in a folder where npm start (svc dev) made an embedded PostgreSQL (./.data/postgres), the command uses that one, starting it for the command when npm start is not running.';

/** A connection string with its password left out, for messages: `postgres://u@h:5432/db`. */
export function withoutPassword(url: string): string {
  const scheme = /^postgres(ql)?:\/\//i.exec(url)?.[0];
  if (!scheme) return url;
  const rest = url.slice(scheme.length);
  const at = rest.indexOf('@');
  if (at === -1) return url;
  const user = rest.slice(0, at).split(':')[0];
  return `${scheme}${user}@${rest.slice(at + 1)}`;
}

export interface CommandDatabase {
  url: string;
  /** True when it is the folder's embedded cluster (a development database). */
  embedded: boolean;
  /** Stops the embedded cluster when this command started it; otherwise does nothing. */
  release(): Promise<void>;
}

const keep = async () => {};

/** The embedded cluster of the folder: the running one, else started for the command. */
async function embeddedDatabase(dataDir: string, port: number | null): Promise<CommandDatabase> {
  const running = runningEmbeddedCluster(dataDir);
  if (running && running.status !== 'ready') {
    throw new CommandError(
      `SVC_DATABASE_URL is unset and the embedded PostgreSQL in ${embeddedDatabaseDir(dataDir)} is ${running.status || 'starting'} (postgres pid ${running.pid}); try again once it is ready`,
    );
  }
  if (running) {
    const url = embeddedUrl(running.port);
    console.error(
      `svc: SVC_DATABASE_URL is unset; using this folder's embedded database ${withoutPassword(url)}`,
    );
    return { url, embedded: true, release: keep };
  }
  try {
    const started = await startEmbeddedPostgres(dataDir, silentLogger(), port);
    console.error(
      `svc: SVC_DATABASE_URL is unset; started this folder's embedded database for this command at ${withoutPassword(started.url)}`,
    );
    return { url: started.url, embedded: true, release: started.stop };
  } catch (error) {
    if (error instanceof EmbeddedDatabaseBusy) throw new CommandError(error.message);
    throw error;
  }
}

/**
 * The database a command (not `serve`) works on. A refused SVC_DATABASE_URL is named;
 * unset, the folder's embedded cluster is used (one line on stderr says so, without the
 * password), else the variable is required.
 */
export async function commandDatabase(
  { config, problems }: LoadedConfig,
  dataDir = DEV_DATA_DIR,
): Promise<CommandDatabase> {
  stopOn(problems.filter((problem) => problem.variable === 'SVC_DATABASE_URL'));
  if (config.server.databaseUrl !== null) {
    return { url: config.server.databaseUrl, embedded: false, release: keep };
  }
  if (hasEmbeddedDatabase(dataDir)) return embeddedDatabase(dataDir, config.server.devPostgresPort);
  throw new CommandError(
    `${DATABASE_URL_REQUIRED}; or run npm start (svc dev) once in this folder to make an embedded database the commands use`,
  );
}
