import { randomBytes } from 'node:crypto';
import { afterAll } from '@jest/globals';
import postgres from 'postgres';
import { createDatabase, type Database } from '../../src/db/client.js';
import {
  adminDatabaseUrl,
  databaseUrlFor,
  templateDatabaseName,
  testDatabasePrefix,
} from './env.js';

export interface TestDatabase {
  name: string;
  url: string;
  database: Database;
  drop(): Promise<void>;
}

async function withAdmin<T>(work: (admin: postgres.Sql) => Promise<T>): Promise<T> {
  const admin = postgres(adminDatabaseUrl, { max: 1, onnotice: () => {} });
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

/**
 * A database of the test file's own: cloned from the migrated template, or empty when
 * `empty` is set (for tests of migrating itself).
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `${testDatabasePrefix()}_test_${randomBytes(6).toString('hex')}`;
  await withAdmin((admin) =>
    admin.unsafe(
      options.empty
        ? `create database "${name}"`
        : `create database "${name}" template "${templateDatabaseName()}"`,
    ),
  );
  const url = databaseUrlFor(name);
  const database = createDatabase(url, { max: 4 });
  return {
    name,
    url,
    database,
    async drop() {
      await database.close();
      await withAdmin((admin) => admin.unsafe(`drop database if exists "${name}" with (force)`));
    },
  };
}

/**
 * A maker of test databases that are all dropped after the calling file's tests; call it
 * at module level.
 */
export function databasesForFile(): (options?: { empty?: boolean }) => Promise<TestDatabase> {
  const made: TestDatabase[] = [];
  afterAll(() => Promise.all(made.map((db) => db.drop())));
  return async (options = {}) => {
    const db = await createTestDatabase(options);
    made.push(db);
    return db;
  };
}
