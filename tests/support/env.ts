import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withDatabaseName } from '../../src/db/client.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const fixturePluginsDir = path.join(repoRoot, 'tests/fixtures/plugins');
export const svcBin = path.join(repoRoot, 'bin/svc.js');

/** The server tests run against: SVC_TEST_DATABASE_URL, else the local PostgreSQL. */
export const adminDatabaseUrl =
  process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrlFor(name: string): string {
  return withDatabaseName(adminDatabaseUrl, name);
}

/** What the databases of this run are named after (tests/setup/global-setup.ts). */
export function testDatabasePrefix(): string {
  const prefix = process.env.SVC_TEST_DATABASE_PREFIX;
  if (!prefix) throw new Error('SVC_TEST_DATABASE_PREFIX is unset: run the tests through jest');
  return prefix;
}

/** The migrated template the global setup built (tests/setup/global-setup.ts). */
export function templateDatabaseName(): string {
  const name = process.env.SVC_TEST_TEMPLATE;
  if (!name) throw new Error('SVC_TEST_TEMPLATE is unset: run the tests through jest');
  return name;
}

export { freePort } from '../../src/dev/free-port.js';
