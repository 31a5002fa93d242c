import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import postgres from 'postgres';
import { createDatabase, isDatabaseUnavailable, type Database } from '../../src/db/client.js';
import { freePort } from '../../src/dev/free-port.js';
import {
  backendPid,
  startPrivateCluster,
  startStandby,
  waitFor,
  type PrivateCluster,
} from '../support/pg-cluster.js';

// patches/postgres+3.4.9.patch, failover part (issue 30): how the service's pool picks
// among the hosts of a multi-host URL. Unpatched, postgres.js 3.4.9 takes a PostgreSQL 14+
// hot standby for read-write, and retries a list with no acceptable host back to back
// until one answers, so a request in the gap hangs.
let primary: PrivateCluster;
let standby: PrivateCluster;
const pools: Database[] = [];

beforeAll(async () => {
  primary = await startPrivateCluster();
  standby = await startStandby(primary, { name: 'driver' });
}, 60_000);

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.close(1)));
  await standby?.destroy();
  await primary?.destroy();
});

function hosts(...clusters: (PrivateCluster | number)[]): string {
  const list = clusters.map((c) => `127.0.0.1:${typeof c === 'number' ? c : c.port}`);
  return `postgres://postgres@${list.join(',')}/postgres`;
}

function pool(url: string): Database {
  const database = createDatabase(url, { max: 1 });
  pools.push(database);
  return database;
}

async function portOf(database: Database): Promise<number> {
  const [row] = await database.sql<{ port: string }[]>`select current_setting('port') as port`;
  return Number(row!.port);
}

async function failure(promise: Promise<unknown>): Promise<{ code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string };
  }
  throw new Error('expected the statement to fail');
}

describe('a multi-host SVC_DATABASE_URL', () => {
  test('connects to the server that takes writes, past a hot standby listed first', async () => {
    expect(await portOf(pool(hosts(standby, primary)))).toBe(primary.port);
  });

  test('with no host taking writes, a statement fails once every host was tried, as unavailable', async () => {
    const error = await failure(pool(hosts(standby)).sql`select 1`);
    expect(error.code).toBe('TARGET_SESSION_ATTRS_UNMET');
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  test('with every host down, a statement fails once every host was tried, as unavailable', async () => {
    const error = await failure(pool(hosts(await freePort(), await freePort())).sql`select 1`);
    expect(error.code).toBe('ECONNREFUSED');
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  test('a connection that finds its session read-only fails its write as unavailable and is replaced', async () => {
    const database = pool(hosts(primary));
    await database.sql`create table if not exists written (n int)`;
    const before = await backendPid(database.sql);
    // As a server made read-only under it would: the pool's one connection, read-only.
    await database.sql`set default_transaction_read_only = on`;
    const refused = await failure(database.sql`insert into written values (1)`);
    expect(refused.code).toBe('25006');
    expect(isDatabaseUnavailable(refused)).toBe(true);
    await database.sql`insert into written values (2)`;
    expect(await backendPid(database.sql)).not.toBe(before);
  });

  test('a server read-only by default is refused like a standby', async () => {
    const admin = postgres(primary.url, { max: 1, onnotice: () => {} });
    const readOnlyForNewSessions = async () => {
      const probe = postgres(primary.url, { max: 1, onnotice: () => {} });
      try {
        const [row] = await probe<
          { ro: string }[]
        >`select current_setting('default_transaction_read_only') as ro`;
        return row?.ro === 'on';
      } finally {
        await probe.end();
      }
    };
    try {
      await admin`alter system set default_transaction_read_only = on`;
      await admin`select pg_reload_conf()`;
      await waitFor('the server to be read-only', readOnlyForNewSessions);
      const error = await failure(pool(hosts(primary)).sql`select 1`);
      expect(error.code).toBe('TARGET_SESSION_ATTRS_UNMET');
    } finally {
      await admin`alter system reset default_transaction_read_only`;
      await admin`select pg_reload_conf()`;
      await waitFor('the server to take writes', async () => !(await readOnlyForNewSessions()));
      await admin.end();
    }
  });

  test('after the primary dies and the standby is promoted, the same pool writes to the standby', async () => {
    const database = pool(hosts(primary, standby));
    expect(await portOf(database)).toBe(primary.port);
    await primary.killPostmaster();
    expect(isDatabaseUnavailable(await failure(database.sql`select 1`))).toBe(true);
    await standby.promote();
    await database.sql`create table promoted (n int)`;
    expect(await portOf(database)).toBe(standby.port);
  });
});
