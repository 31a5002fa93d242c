import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const fixturePluginsDir = path.join(repoRoot, 'tests/fixtures/plugins');
export const svcBin = path.join(repoRoot, 'bin/svc.js');

/** The server tests run against: SVC_TEST_DATABASE_URL, else the local PostgreSQL. */
export const adminDatabaseUrl =
  process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrlFor(name: string): string {
  const url = new URL(adminDatabaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The migrated template the global setup built (tests/setup/global-setup.ts). */
export function templateDatabaseName(): string {
  const name = process.env.SVC_TEST_TEMPLATE;
  if (!name) throw new Error('SVC_TEST_TEMPLATE is unset: run the tests through jest');
  return name;
}

/** A port nothing listens on right now, for a server process the test starts. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
