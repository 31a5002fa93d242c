import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import postgres from 'postgres';
import {
  EmbeddedDatabaseBusy,
  startEmbeddedCluster,
  type EmbeddedDatabase,
} from '../../src/dev/embedded-postgres.js';
import { freePort } from '../support/env.js';

// The one start behind svc dev's database (tests/cli/dev.test.ts runs that one through the
// command) and the tests' own fallback in tests/setup/global-setup.ts.
const folder = mkdtempSync(path.join(tmpdir(), 'svc-embedded-'));
// As root the cluster runs as a `postgres` user, which must reach the data folder.
chmodSync(folder, 0o755);
const databaseDir = path.join(folder, 'cluster');
const started: EmbeddedDatabase[] = [];

afterAll(async () => {
  for (const cluster of started) await cluster.stop();
  rmSync(folder, { recursive: true, force: true });
});

async function whoAnswers(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ database: string; address: string; port: string }[]>`
      select current_database() as database, inet_server_addr()::text as address,
        current_setting('port') as port`;
    return row;
  } finally {
    await sql.end();
  }
}

describe('startEmbeddedCluster', () => {
  test('makes a cluster with its database on first start, on the port asked, on 127.0.0.1 only, and keeps it', async () => {
    const port = await freePort();
    const first = await startEmbeddedCluster({ databaseDir, port, database: 'probe' });
    started.push(first);
    expect(first.url).toBe(`postgres://postgres:postgres@127.0.0.1:${port}/probe`);
    expect(await whoAnswers(first.url)).toEqual({
      database: 'probe',
      address: '127.0.0.1/32',
      port: String(port),
    });
    await first.stop();
    started.pop();
    expect(existsSync(path.join(databaseDir, 'PG_VERSION'))).toBe(true);

    // Started again on the kept directory, on a free port, naming the `postgres` database.
    const again = await startEmbeddedCluster({ databaseDir });
    started.push(again);
    expect(again.url).toMatch(/^postgres:\/\/postgres:postgres@127\.0\.0\.1:\d+\/postgres$/);
    expect((await whoAnswers(again.url))?.database).toBe('postgres');
  });

  test('refuses a second start while the directory is running, naming it', async () => {
    const start = startEmbeddedCluster({ databaseDir });
    await expect(start).rejects.toBeInstanceOf(EmbeddedDatabaseBusy);
    await expect(start).rejects.toThrow(
      `the embedded PostgreSQL in ${databaseDir} is already running (postgres pid `,
    );
  });
});
