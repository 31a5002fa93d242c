import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { runSvc, svc, waitForOutput, finished } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/env.js';

describe('svc check', () => {
  test('valid configuration exits 0', async () => {
    const result = await runSvc(['check'], { SVC_DATABASE_URL: 'postgres://u:p@127.0.0.1:1/none' });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('configuration is valid');
  });

  test('without SVC_DATABASE_URL names it and exits 1, as serve does', async () => {
    // A folder of its own: no .env, no embedded database.
    const cwd = mkdtempSync(path.join(tmpdir(), 'svc-check-'));
    const result = await runSvc(['check'], {}, { cwd });
    rmSync(cwd, { recursive: true });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'configuration refused:\n- SVC_DATABASE_URL is required (postgres://user:password@host:port/db)',
    );
    expect(result.stdout).toBe('');
  });

  test('names every refused variable and exits 1 without connecting to the database', async () => {
    // Port 1 has no database; check must not notice.
    const result = await runSvc(['check'], {
      SVC_DATABASE_URL: 'postgres://u:p@127.0.0.1:1/none',
      SVC_GRAPH_PAGE_CAP: '5000',
      SVC_SMTP_PORT: '25',
      SVC_COMMAND_RECORDS_LIMIT: 'lots',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_GRAPH_PAGE_CAP');
    expect(result.stderr).toContain('SVC_SMTP_PORT is set but SVC_SMTP_HOST is not');
    expect(result.stderr).toContain('SVC_COMMAND_RECORDS_LIMIT');
    expect(result.stderr).not.toMatch(/ECONNREFUSED|connect/);
  });

  test('names each refused SVC_CORS_ORIGINS entry and exits 1', async () => {
    const result = await runSvc(['check'], {
      SVC_DATABASE_URL: 'postgres://u:p@127.0.0.1:1/none',
      SVC_CORS_ORIGINS: 'https://app.example.com, null, https://admin.example.com/ui',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'SVC_CORS_ORIGINS must list http or https origins; null is refused (any sandboxed page sends it) (got "null")',
    );
    expect(result.stderr).toContain(
      'SVC_CORS_ORIGINS must list origins with no path, query, fragment or user name (got "https://admin.example.com/ui")',
    );
  });

  test('reads ./.env, and a real environment variable wins over it', async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'svc-env-'));
    writeFileSync(path.join(cwd, '.env'), 'SVC_GRAPH_PAGE_CAP=9999\nSVC_TOAST_DURATION=soon\n');
    const result = await runSvc(['check'], { SVC_TOAST_DURATION: '2s' }, { cwd });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_GRAPH_PAGE_CAP');
    expect(result.stderr).not.toContain('SVC_TOAST_DURATION');
  });
});

describe('usage', () => {
  test('an unknown command is a usage error, exit 2', async () => {
    const result = await runSvc(['nonsense']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('nonsense');
  });
});

describe('svc serve', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
  });
  afterAll(() => db.drop());

  test('refuses to start on a refused value, naming it', async () => {
    const result = await runSvc(['serve'], {
      SVC_DATABASE_URL: db.url,
      SVC_HTTP_IDLE_TIMEOUT: '0s',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_HTTP_IDLE_TIMEOUT');
  });

  test('refuses to start without SVC_DATABASE_URL', async () => {
    const result = await runSvc(['serve'], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_DATABASE_URL');
  });

  test('ignores a refused command-record value', async () => {
    const child = svc(['serve'], {
      SVC_DATABASE_URL: db.url,
      SVC_ADDR: `127.0.0.1:${await freePort()}`,
      SVC_COMMAND_RECORDS_LIMIT: 'lots',
    });
    const done = finished(child);
    const output = await waitForOutput(child, /"msg":"listening"/);
    const url = /"url":"([^"]+)"/.exec(output)?.[1];
    const response = await fetch(`${url}/api/readyz`);
    expect(await response.json()).toEqual({ status: 'ready' });
    child.kill('SIGTERM');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"msg":"stopped"');
  });
});

describe('svc migrate', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
  });
  afterAll(() => db.drop());

  test('with a refused mail value, applies the core migrations and then stops with exit 1', async () => {
    const result = await runSvc(['migrate'], { SVC_DATABASE_URL: db.url, SVC_SMTP_TLS: 'none' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_SMTP_TLS is set but SVC_SMTP_HOST is not');
    const [row] = await db.database
      .sql`select count(*)::int as n from drizzle.__drizzle_migrations`;
    expect(row?.n).toBeGreaterThan(0);
  });

  test('with a refused graph value, migrates and exits 0', async () => {
    const result = await runSvc(['migrate'], {
      SVC_DATABASE_URL: db.url,
      SVC_GRAPH_PAGE_CAP: 'many',
    });
    expect(result.code).toBe(0);
  });
});
