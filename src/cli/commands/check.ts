import { defineCommand } from 'citty';
import type { ConfigProblem } from '../../config.js';
import { formatProblems } from '../../config/problems.js';
import {
  DEV_DATA_DIR,
  embeddedDatabaseDir,
  hasEmbeddedDatabase,
} from '../../dev/embedded-postgres.js';
import { commandConfig, DATABASE_URL_REQUIRED } from '../config.js';
import { CommandError } from '../errors.js';

/**
 * SPEC 8.2 lists SVC_DATABASE_URL as required: `check` answers whether `serve` would
 * start, and `serve` never uses the folder's embedded database, so an unset URL is named
 * even where one exists (saying who uses it instead).
 */
function unsetDatabaseUrl(): ConfigProblem {
  const embedded = hasEmbeddedDatabase(DEV_DATA_DIR)
    ? `; the embedded database in ${embeddedDatabaseDir(DEV_DATA_DIR)} serves only svc dev and the other commands run in this folder, never svc serve`
    : '';
  return {
    variable: 'SVC_DATABASE_URL',
    group: 'server',
    message: DATABASE_URL_REQUIRED + embedded,
  };
}

export default defineCommand({
  meta: {
    name: 'check',
    description:
      'Validate the configuration svc serve would run with, without connecting to the database',
  },
  run() {
    const { config, problems } = commandConfig();
    const refusedUrl = problems.some((problem) => problem.variable === 'SVC_DATABASE_URL');
    const every =
      config.server.databaseUrl === null && !refusedUrl
        ? [unsetDatabaseUrl(), ...problems]
        : problems;
    if (every.length > 0)
      throw new CommandError(`configuration refused:\n${formatProblems(every)}`);
    console.log('configuration is valid');
  },
});
