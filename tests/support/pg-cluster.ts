import { execFile } from 'node:child_process';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { freePort } from '../../src/dev/free-port.js';

const run = promisify(execFile);

/** PostgreSQL's programs; PG_BIN overrides for machines that keep them elsewhere. */
const pgBin = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * A PostgreSQL cluster of the test's own, on its own port and data directory, for tests
 * that stop, crash or kill the server. Never do that to the shared server at :5432: a
 * killed backend makes its postmaster reset every connection of every other test.
 */
export interface PrivateCluster {
  port: number;
  /** Superuser URL of the `postgres` database. */
  url: string;
  dataDir: string;
  /** Starts the server and waits until it accepts connections. */
  start(): Promise<void>;
  /** `pg_ctl stop -m <mode>`; `immediate` is a crash as far as clients can tell. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** SIGKILLs the postmaster and waits for its children to go, as a crash would. */
  killPostmaster(): Promise<void>;
  /** The postmaster's pid, or null when it is not running. */
  postmasterPid(): Promise<number | null>;
  /** Stops the server (if running) and deletes its files. */
  destroy(): Promise<void>;
  /** `pg_ctl promote`: a standby ends recovery and accepts writes; waits until it does. */
  promote(): Promise<void>;
}

export interface StandbyOptions {
  /** Its `application_name` towards the primary, as `synchronous_standby_names` names it. */
  name?: string;
  /**
   * Makes the primary wait for this standby's flush before a commit returns
   * (`synchronous_standby_names` = name, `synchronous_commit = on`), and waits until the
   * primary reports it `sync`. @default false
   */
  synchronous?: boolean;
}

// PostgreSQL refuses to run as root; as root (CI) its programs run as the `postgres` user.
const asRoot = process.getuid?.() === 0;

async function pgRun(program: string, args: string[]): Promise<string> {
  const file = join(pgBin, program);
  const { stdout } = asRoot
    ? await run('runuser', ['-u', 'postgres', '--', file, ...args])
    : await run(file, args);
  return stdout;
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const { stdout } = await run('id', ['postgres']);
  const uid = /uid=(\d+)/.exec(stdout)?.[1];
  const gid = /gid=(\d+)/.exec(stdout)?.[1];
  if (!uid || !gid) throw new Error(`cannot read the postgres user's ids: ${stdout}`);
  return { uid: Number(uid), gid: Number(gid) };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Polls `check` every 50 ms until it holds, failing after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The pids of the processes whose parent is `parent` (Linux /proc). */
async function childrenOf(parent: number): Promise<number[]> {
  try {
    const tasks = await readFile(`/proc/${parent}/task/${parent}/children`, 'utf8');
    return tasks.split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A new temporary directory the postgres user owns. */
async function dataDirectory(): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-pg-'));
  if (asRoot) {
    const { uid, gid } = await postgresIds();
    await chown(dataDir, uid, gid);
  }
  return dataDir;
}

/**
 * Initialises a private cluster in a new temporary directory (trust authentication,
 * loopback only, no fsync: it holds nothing worth keeping) and starts it. initdb's
 * defaults (wal_level replica, max_wal_senders 10, trusted replication connections from
 * 127.0.0.1) let `startStandby` copy it.
 */
export async function startPrivateCluster(): Promise<PrivateCluster> {
  const dataDir = await dataDirectory();
  await pgRun('initdb', [
    '-D',
    dataDir,
    '-U',
    'postgres',
    '-A',
    'trust',
    '-E',
    'UTF8',
    '--no-sync',
    '--no-instructions',
  ]);
  return runCluster(dataDir);
}

/**
 * A hot standby of `primary`: `pg_basebackup -R` (streaming the WAL it needs, then
 * following the primary through `primary_conninfo`) into a new directory, started on a
 * port of its own. With `synchronous`, the primary then waits for it on every commit.
 */
export async function startStandby(
  primary: PrivateCluster,
  options: StandbyOptions = {},
): Promise<PrivateCluster> {
  const name = options.name ?? 'standby';
  const dataDir = await dataDirectory();
  await pgRun('pg_basebackup', [
    '-d',
    `host=127.0.0.1 port=${primary.port} user=postgres application_name=${name}`,
    '-D',
    dataDir,
    '-R',
    '-X',
    'stream',
    '-c',
    'fast',
    '--no-sync',
  ]);
  const standby = await runCluster(dataDir);
  const admin = postgres(primary.url, { max: 1, onnotice: () => {} });
  try {
    if (options.synchronous) {
      await admin.unsafe(`alter system set synchronous_standby_names = '${name}'`);
      await admin`alter system set synchronous_commit = 'on'`;
      await admin`select pg_reload_conf()`;
    }
    const state = options.synchronous ? 'sync' : 'async';
    await waitFor(`the standby ${name} to stream (${state})`, async () => {
      const rows = await admin`
        select 1 from pg_stat_replication
        where application_name = ${name} and state = 'streaming' and sync_state = ${state}`;
      return rows.length > 0;
    });
  } finally {
    await admin.end({ timeout: 1 });
  }
  return standby;
}

/** Runs the cluster in `dataDir` on a free port. */
async function runCluster(dataDir: string): Promise<PrivateCluster> {
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;

  async function postmasterPid(): Promise<number | null> {
    try {
      const first = (await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0];
      const pid = Number(first);
      return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : null;
    } catch {
      return null;
    }
  }

  async function start(): Promise<void> {
    await pgRun('pg_ctl', [
      '-D',
      dataDir,
      '-l',
      join(dataDir, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      `-p ${port} -k ${dataDir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  }

  async function stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    if ((await postmasterPid()) === null) return;
    await pgRun('pg_ctl', ['-D', dataDir, '-m', mode, '-w', 'stop']);
  }

  async function killPostmaster(): Promise<void> {
    const pid = await postmasterPid();
    if (pid === null) throw new Error('the private cluster is not running');
    const children = await childrenOf(pid);
    process.kill(pid, 'SIGKILL');
    // Orphaned backends leave on noticing their postmaster gone; until they have, their
    // shared memory keeps a new postmaster from starting.
    await waitFor('the killed postmaster and its backends to exit', () =>
      [pid, ...children].every((p) => !alive(p)),
    );
  }

  await start();
  return {
    port,
    url,
    dataDir,
    start,
    stop,
    killPostmaster,
    postmasterPid,
    promote: () => pgRun('pg_ctl', ['-D', dataDir, '-w', '-t', '30', 'promote']).then(() => {}),
    async destroy() {
      try {
        await stop('immediate');
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/** The pid of the backend serving `client`'s next query (a reserved connection's own). */
export async function backendPid(client: postgres.Sql | postgres.ReservedSql): Promise<number> {
  const [row] = await client<{ pid: number }[]>`select pg_backend_pid() as pid`;
  return row!.pid;
}
