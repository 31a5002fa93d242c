import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, test } from '@jest/globals';
import postgres from 'postgres';
import { dropStaleTemplates, testDatabasePrefix } from '../setup/global-setup.js';
import { createTestDatabase } from './database.js';
import { adminDatabaseUrl, repoRoot, templateDatabaseName } from './env.js';

// What the tests create and drop on their server is scoped to a prefix of their own
// (SVC_TEST_DATABASE_PREFIX, else one derived from the checkout's path), so a run never
// drops another checkout's template, even one as old as theirs.

const admin = postgres(adminDatabaseUrl, { max: 1, onnotice: () => {} });
const made: string[] = [];

afterAll(async () => {
  for (const name of made) await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.end();
});

async function templateBuilt(name: string, at: string): Promise<void> {
  await admin.unsafe(`create database "${name}"`);
  made.push(name);
  await admin.unsafe(`comment on database "${name}" is 'svc test template built ${at}'`);
}

async function exists(name: string): Promise<boolean> {
  const rows = await admin`select 1 from pg_database where datname = ${name}`;
  return rows.length === 1;
}

describe('the test databases’ prefix', () => {
  test('defaults to one derived from the checkout’s path; SVC_TEST_DATABASE_PREFIX sets it', () => {
    const derived = `svc_${createHash('sha256').update(repoRoot).digest('hex').slice(0, 8)}`;
    expect(testDatabasePrefix({})).toBe(derived);
    expect(testDatabasePrefix({ SVC_TEST_DATABASE_PREFIX: '' })).toBe(derived);
    expect(testDatabasePrefix({ SVC_TEST_DATABASE_PREFIX: 'ci_run_7' })).toBe('ci_run_7');
    for (const refused of ['CI', '7run', 'a-b', 'x'.repeat(31), 'a"; drop']) {
      expect(() => testDatabasePrefix({ SVC_TEST_DATABASE_PREFIX: refused })).toThrow(
        'SVC_TEST_DATABASE_PREFIX must be 1 to 30 lowercase letters',
      );
    }
  });

  test('names this run’s template and every database a test makes', async () => {
    const prefix = process.env.SVC_TEST_DATABASE_PREFIX as string;
    expect(templateDatabaseName().startsWith(`${prefix}_template_`)).toBe(true);
    const db = await createTestDatabase();
    try {
      expect(db.name.startsWith(`${prefix}_test_`)).toBe(true);
    } finally {
      await db.drop();
    }
  });

  test('stale templates are dropped under the run’s own prefix only, however old another’s are', async () => {
    const id = randomBytes(4).toString('hex');
    const prefix = `scope${id}`;
    const long = '2000-01-01T00:00:00Z';
    const ownStale = `${prefix}_template_old`;
    const ownFresh = `${prefix}_template_new`;
    // Another checkout's, under the old naming every checkout shared, and under its own.
    const othersShared = `svc_template_${id}`;
    const othersOwn = `scopx${id}_template_old`;
    await templateBuilt(ownStale, long);
    await templateBuilt(ownFresh, new Date().toISOString());
    await templateBuilt(othersShared, long);
    await templateBuilt(othersOwn, long);

    expect(await dropStaleTemplates(admin, prefix, `${prefix}_template_current`)).toEqual([
      ownStale,
    ]);
    expect(await exists(ownStale)).toBe(false);
    expect(await exists(ownFresh)).toBe(true);
    expect(await exists(othersShared)).toBe(true);
    expect(await exists(othersOwn)).toBe(true);
  });
});
