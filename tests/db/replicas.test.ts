// Issue 30 part 2: SVC_DATABASE_REPLICA_URLS against a real streaming replica (private
// clusters): the routing itself, in this process with short windows (a statement tells
// which server ran it by pg_is_in_recovery()), then through a real `svc serve` (the
// replica's pg_stat_activity tells which reads reached it).
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import postgres from 'postgres';
import { createDatabase, type Database } from '../../src/db/client.js';
import { createQueryGate } from '../../src/db/gate.js';
import { lsnValue, routeOf, startReadRouting, type ReadRouting } from '../../src/db/replicas.js';
import { silentLogger } from '../../src/log.js';
import { operationToRun } from '../../src/http/guards/graph-request.js';
import { runSvc, serveProcesses, type ServedProcess } from '../support/cli.js';
import { bearerFor, createUser, createWorkspace } from '../support/factories.js';
import {
  startPrivateCluster,
  startStandby,
  waitFor,
  type PrivateCluster,
} from '../support/pg-cluster.js';

describe('which operations may read a replica', () => {
  test.each([
    ['query { contacts(first: 5) { edges { node { id } } } }', 'replica'],
    [
      'query { a: tasks(first: 5) { edges { node { id } } } b: contacts(q: "x") { edges { node { id } } } }',
      'replica',
    ],
    ['query McpGetContact($id: UUID!) { contact(id: $id) { id name } }', 'replica'],
    ['{ users { id } }', 'replica'],
    ['{ me { id } contacts(first: 1) { edges { node { id } } } }', 'primary'],
    [
      'query { ...F } fragment F on Query { contacts(first: 1) { edges { node { id } } } }',
      'primary',
    ],
    ['subscription { coreEvent { id } }', 'primary'],
    ['mutation { createContact(input: { name: "x" }) { id } }', 'write'],
    ['not graphql', 'primary'],
  ])('%s: %s', (query, route) => {
    expect(routeOf(operationToRun({ query, operationName: null }))).toBe(route);
  });

  test('write-ahead log positions order as PostgreSQL orders them', () => {
    expect(lsnValue('0/16B3748') < lsnValue('0/16B3750')).toBe(true);
    expect(lsnValue('0/FFFFFFFF') < lsnValue('1/0')).toBe(true);
  });
});

let primary: PrivateCluster;
let standby: PrivateCluster;
let replicaAdmin: postgres.Sql;
const pools: Database[] = [];
const routings: ReadRouting[] = [];

beforeAll(async () => {
  primary = await startPrivateCluster();
  expect((await runSvc(['migrate'], { SVC_DATABASE_URL: primary.url })).code).toBe(0);
  standby = await startStandby(primary, { name: 'replica' });
  replicaAdmin = postgres(standby.url, { max: 1, onnotice: () => {} });
}, 60_000);

afterAll(async () => {
  await Promise.all(routings.map((routing) => routing.close()));
  await Promise.all(pools.map((pool) => pool.close(1)));
  await replicaAdmin?.end();
  await standby?.destroy();
  await primary?.destroy();
});

function pool(url: string, replica = false): Database {
  const database = createDatabase(url, {
    max: 2,
    ...(replica ? { targetSessionAttrs: null } : {}),
  });
  pools.push(database);
  return database;
}

async function routing(options: { maxLagMs: number; writeWindowMs: number }) {
  const primaryPool = pool(primary.url);
  const replicaPool = pool(standby.url, true);
  const started = await startReadRouting({
    primary: primaryPool,
    primaryGate: createQueryGate(primaryPool, { share: 2 }),
    replicas: [{ database: replicaPool, gate: createQueryGate(replicaPool, { share: 2 }) }],
    ...options,
    log: silentLogger(),
  });
  routings.push(started);
  return started;
}

const LIST = '{ contacts(first: 100) { edges { node { name } } } }';
const NOT_ONLY_LISTS = '{ me { id } contacts(first: 1) { edges { node { id } } } }';
const WRITE = 'mutation { createContact(input: { name: "x" }) { id } }';

/** Which server `routing` gives `caller`'s request running `query`. */
async function served(routing: ReadRouting, caller: string, query: string) {
  const database = routing.forRequest(caller, new AbortController().signal, () => ({
    query,
    operationName: null,
  }));
  const [row] = await database.sql<{ standby: boolean }[]>`
    select pg_is_in_recovery() as standby`;
  return row?.standby ? 'replica' : 'primary';
}

describe('read routing against a streaming replica', () => {
  test('lists go to the replica once the first window has passed; other reads stay on the primary', async () => {
    const router = await routing({ maxLagMs: 60_000, writeWindowMs: 1_000 });
    // Just after it starts listening, every caller may have written unheard.
    expect(await served(router, 'reader', LIST)).toBe('primary');
    await waitFor(
      'the replica to serve',
      async () => (await served(router, 'reader', LIST)) === 'replica',
    );
    expect(await served(router, 'reader', NOT_ONLY_LISTS)).toBe('primary');
    expect(await served(router, 'reader', 'subscription { coreEvent { id } }')).toBe('primary');
  });

  test('a caller that ran a mutation reads the primary for the window, in this process and another', async () => {
    const here = await routing({ maxLagMs: 60_000, writeWindowMs: 3_000 });
    const there = await routing({ maxLagMs: 60_000, writeWindowMs: 3_000 });
    await waitFor(
      'both to serve from the replica',
      async () =>
        (await served(here, 'writer', LIST)) === 'replica' &&
        (await served(there, 'writer', LIST)) === 'replica',
    );
    expect(await served(here, 'writer', WRITE)).toBe('primary');
    expect(await served(here, 'writer', LIST)).toBe('primary');
    expect(await served(here, 'someone else', LIST)).toBe('replica');
    await waitFor(
      'the other process to hear of the write',
      async () => (await served(there, 'writer', LIST)) === 'primary',
    );
    await waitFor(
      'the window to pass',
      async () => (await served(here, 'writer', LIST)) === 'replica',
    );
  });

  test('a replica further behind than the bound serves nothing until it catches up', async () => {
    const router = await routing({ maxLagMs: 300, writeWindowMs: 200 });
    await waitFor(
      'the replica to serve',
      async () => (await served(router, 'reader', LIST)) === 'replica',
    );
    const write = pool(primary.url);
    await replicaAdmin`select pg_wal_replay_pause()`;
    try {
      await write.sql`create table if not exists lag_probe (n int)`;
      await waitFor('the replica to fall behind', async () => {
        await write.sql`insert into lag_probe values (1)`;
        return (await served(router, 'reader', LIST)) === 'primary';
      });
    } finally {
      await replicaAdmin`select pg_wal_replay_resume()`;
    }
    await waitFor(
      'the replica to serve again',
      async () => (await served(router, 'reader', LIST)) === 'replica',
    );
  });
});

describe('svc serve with a streaming replica', () => {
  const serve = serveProcesses();
  let served: ServedProcess;
  let reader: Record<string, string>;
  let writer: Record<string, string>;

  beforeAll(async () => {
    const database = createDatabase(primary.url, { max: 1 });
    try {
      const workspace = await createWorkspace(database.db);
      const json = { 'content-type': 'application/json' };
      reader = {
        ...(await bearerFor(database.db, await createUser(database.db, workspace))),
        ...json,
      };
      writer = {
        ...(await bearerFor(database.db, await createUser(database.db, workspace))),
        ...json,
      };
    } finally {
      await database.close();
    }
    served = await serve({
      SVC_DATABASE_URL: primary.url,
      SVC_DATABASE_REPLICA_URLS: standby.url,
      // The read-your-writes window is this + 5 s + the lag bound (2 s): 8 s after start.
      SVC_GRAPH_OPERATION_TIMEOUT: '1s',
    });
  }, 60_000);

  async function graph(headers: Record<string, string>, query: string) {
    const response = await fetch(`${served.url}/api/graphql`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** The names `headers`'s caller lists; fails on anything but a 200 with data. */
  async function names(headers: Record<string, string>): Promise<string[]> {
    const { status, body } = await graph(headers, LIST);
    expect({ status, errors: body.errors }).toEqual({ status: 200, errors: undefined });
    const data = body.data as { contacts: { edges: { node: { name: string } }[] } };
    return data.contacts.edges.map((edge) => edge.node.name);
  }

  /** The names the MCP tool find_contacts answers `headers`'s caller for `query`. */
  async function found(headers: Record<string, string>, query: string): Promise<string[]> {
    const client = new Client({ name: 'replica-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${served.url}/api/mcp`), {
        requestInit: { headers: { authorization: headers.authorization! } },
      }),
    );
    try {
      const result = await client.callTool({ name: 'find_contacts', arguments: { query } });
      const { contacts } = result.structuredContent as { contacts: { name: string }[] };
      return contacts.map((contact) => contact.name);
    } finally {
      await client.close();
    }
  }

  /** Whether the service ran a statement other than its lag check on the replica since `since`. */
  async function replicaReadSince(since: Date): Promise<boolean> {
    const rows = await replicaAdmin`
      select 1 from pg_stat_activity
      where application_name = 'svc replica' and query_start > ${since}
        and query not ilike '%pg_last_wal_replay_lsn%'`;
    return rows.length > 0;
  }

  async function replicaNow(): Promise<Date> {
    const [row] = await replicaAdmin<{ now: Date }[]>`select clock_timestamp() as now`;
    return row!.now;
  }

  test('a list and an MCP search read the replica; a writer reads its own write on the primary', async () => {
    let since = await replicaNow();
    await waitFor(
      "the reader's list to reach the replica",
      async () => (await names(reader), await replicaReadSince(since)),
      20_000,
    );
    since = await replicaNow();
    await found(reader, 'Ada');
    expect(await replicaReadSince(since)).toBe(true);
    const { body } = await graph(
      writer,
      'mutation { createContact(input: { name: "Ada" }) { id } }',
    );
    expect(body.errors).toBeUndefined();
    since = await replicaNow();
    expect(await names(writer)).toContain('Ada');
    expect(await found(writer, 'Ada')).toEqual(['Ada']);
    expect(await replicaReadSince(since)).toBe(false);
  });

  test('when the replica goes down, reads fall back to the primary, never answering INTERNAL', async () => {
    await standby.stop('immediate');
    const { body } = await graph(
      writer,
      'mutation { createContact(input: { name: "Grace" }) { id } }',
    );
    expect(body.errors).toBeUndefined();
    const answers: number[] = [];
    await waitFor('the reader to be served by the primary', async () => {
      const { status, body: answer } = await graph(reader, LIST);
      answers.push(status);
      if (status !== 200) {
        expect(answer.errors).toEqual([
          expect.objectContaining({
            extensions: expect.objectContaining({ code: 'UNAVAILABLE' }) as unknown,
          }),
        ]);
        return false;
      }
      return JSON.stringify(answer.data).includes('Grace');
    });
    expect(answers.every((status) => status === 200 || status === 503)).toBe(true);
  });
});
