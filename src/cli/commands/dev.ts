import path from 'node:path';
import { defineCommand } from 'citty';
import { problemsStoppingServe } from '../../config.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../dev/embedded-postgres.js';
import { ensureFirstAdmin, type FirstAdmin } from '../../dev/first-run.js';
import { GRAPH_PATH } from '../../graph/server.js';
import { createLogger } from '../../log.js';
import { startService } from '../../server.js';
import { commandConfig, stopOn } from '../config.js';
import { untilSignal } from '../signals.js';

const DATA_DIR = '.data';

function banner(url: string, admin: FirstAdmin, embedded: boolean): string {
  const password = admin.password ?? '(set before this data folder; not kept here)';
  const login = admin.password
    ? `mutation { login(email: "${admin.email}", password: "${admin.password}") { me { id name } } }`
    : '';
  return [
    '',
    `svc is running at ${url}`,
    `  interactive GraphQL page: ${url}${GRAPH_PATH}`,
    `  sign in as ${admin.email} with password ${password}`,
    login && `  in the page: ${login}`,
    `  database: ${embedded ? `embedded PostgreSQL in ${path.resolve(DATA_DIR, 'postgres')}` : 'SVC_DATABASE_URL'}`,
    '  stop with Ctrl+C',
    '',
  ]
    .filter(Boolean)
    .join('\n');
}

export default defineCommand({
  meta: {
    name: 'dev',
    description:
      'Zero-setup local server: an embedded PostgreSQL when SVC_DATABASE_URL is unset, a first admin, the interactive page on',
  },
  async run() {
    // Listening from the start: a Ctrl+C during start-up still stops everything cleanly.
    const signalled = untilSignal();
    const loaded = commandConfig();
    stopOn(problemsStoppingServe(loaded.problems));
    const config = { ...loaded.config, server: { ...loaded.config.server, devGraphiql: true } };
    // Readable lines for the person at the terminal; `svc serve` writes JSON (docs/decisions.md).
    const log = createLogger({ format: 'pretty' });
    let embedded: EmbeddedDatabase | null = null;
    if (!config.server.databaseUrl) embedded = await startEmbeddedPostgres(DATA_DIR, log);
    try {
      const databaseUrl = config.server.databaseUrl ?? (embedded as EmbeddedDatabase).url;
      const service = await startService({ config, log, databaseUrl });
      const admin = await ensureFirstAdmin(service.database.db, DATA_DIR);
      console.log(banner(service.url, admin, embedded !== null));
      await signalled;
      await service.shutdown();
    } finally {
      await embedded?.stop();
    }
  },
});
