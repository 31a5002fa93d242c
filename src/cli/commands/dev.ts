import { defineCommand } from 'citty';
import { problemsStoppingServe } from '../../config/problems.js';
import {
  DEV_DATA_DIR,
  embeddedDatabaseDir,
  EmbeddedDatabaseBusy,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
} from '../../dev/embedded-postgres.js';
import { ensureFirstAdmin, type FirstAdmin } from '../../dev/first-run.js';
import { GRAPH_PATH } from '../../graph/server.js';
import { createLogger } from '../../log.js';
import { startService } from '../../server.js';
import { commandConfig, stopOn } from '../config.js';
import { withoutPassword } from '../database.js';
import { CommandError } from '../errors.js';
import { untilSignal } from '../signals.js';

/**
 * Where a browser reaches `url`: a server listening on every interface (SVC_ADDR
 * `0.0.0.0:8080`, `:8080`) answers on loopback, which `http://0.0.0.0:…` is not.
 */
export function browsableUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.hostname === '0.0.0.0') parsed.hostname = '127.0.0.1';
  if (parsed.hostname === '[::]') parsed.hostname = '[::1]';
  return parsed.origin;
}

function signIn(admin: FirstAdmin): string[] {
  if (admin.email === null || admin.password === null) {
    return [
      '  this folder keeps no sign-in for this database (its first workspace was made elsewhere); svc account:create-admin adds an admin',
    ];
  }
  // The page opens on a Login operation taking $email and $password: these are its
  // variables as its variables editor holds them, so no password is written into a query.
  const variables = JSON.stringify({ email: admin.email, password: admin.password });
  return [
    `  sign in as ${admin.email} with password ${admin.password}`,
    `    the page opens on a Login operation; put these in its variables and run it: ${variables}`,
  ];
}

function banner(url: string, admin: FirstAdmin, databaseUrl: string, embedded: boolean): string {
  const base = browsableUrl(url);
  const database = embedded
    ? [
        `  database: ${withoutPassword(databaseUrl)} (embedded PostgreSQL in ${embeddedDatabaseDir(DEV_DATA_DIR)})`,
        '  svc commands run in this folder use it too while SVC_DATABASE_URL is unset',
      ]
    : [`  database: ${withoutPassword(databaseUrl)} (SVC_DATABASE_URL)`];
  return [
    '',
    'svc is running',
    `  interactive GraphQL page: ${base}${GRAPH_PATH}`,
    ...signIn(admin),
    `  health: ${base}/api/healthz, readiness: ${base}/api/readyz`,
    ...database,
    '  stop with Ctrl+C',
    '',
  ].join('\n');
}

async function startEmbedded(
  log: ReturnType<typeof createLogger>,
  port: number | null,
): Promise<EmbeddedDatabase> {
  try {
    return await startEmbeddedPostgres(DEV_DATA_DIR, log, port);
  } catch (error) {
    if (error instanceof EmbeddedDatabaseBusy) throw new CommandError(error.message);
    throw error;
  }
}

export default defineCommand({
  meta: {
    name: 'dev',
    description:
      'Run a local server with no setup: it uses SVC_DATABASE_URL, or else an embedded PostgreSQL kept in ./.data, makes a first admin and serves the interactive GraphQL page.',
  },
  async run() {
    // Listening from the start: a Ctrl+C during start-up still stops everything cleanly.
    const signalled = untilSignal();
    const loaded = commandConfig();
    stopOn(problemsStoppingServe(loaded.problems));
    const config = { ...loaded.config, server: { ...loaded.config.server, devGraphiql: true } };
    // Readable lines for the person at the terminal; `svc serve` writes JSON (docs/decisions.md).
    const log = createLogger({ format: 'pretty', level: config.server.logLevel });
    let embedded: EmbeddedDatabase | null = null;
    if (!config.server.databaseUrl)
      embedded = await startEmbedded(log, config.server.devPostgresPort);
    try {
      const databaseUrl = config.server.databaseUrl ?? (embedded as EmbeddedDatabase).url;
      const service = await startService({ config, log, databaseUrl });
      const admin = await ensureFirstAdmin(service.database.db, DEV_DATA_DIR);
      console.log(banner(service.url, admin, databaseUrl, embedded !== null));
      await signalled;
      await service.shutdown();
    } finally {
      await embedded?.stop();
    }
  },
});
