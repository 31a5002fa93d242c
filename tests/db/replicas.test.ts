// Issue 30 part 2: SVC_DATABASE_REPLICA_URLS against a real streaming replica (private
// clusters), through a real `svc serve`. Replay on the replica is paused to make what it
// serves visible: a read that misses a committed contact came from the replica.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import postgres from 'postgres';
import { createDatabase } from '../../src/db/client.js';
import { lsnValue, routeOf } from '../../src/db/replicas.js';
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

const serve = serveProcesses();
let primary: PrivateCluster;
let standby: PrivateCluster;
let served: ServedProcess;
let reader: Record<string, string>;
let writer: Record<string, string>;
let replicaAdmin: postgres.Sql;

beforeAll(async () => {
  primary = await startPrivateCluster();
  expect((await runSvc(['migrate'], { SVC_DATABASE_URL: primary.url })).code).toBe(0);
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
  standby = await startStandby(primary, { name: 'replica' });
  replicaAdmin = postgres(standby.url, { max: 1, onnotice: () => {} });
  served = await serve({
    SVC_DATABASE_URL: primary.url,
    SVC_DATABASE_REPLICA_URLS: standby.url,
    // Paused replay must not make the replica leave during the test.
    SVC_DATABASE_REPLICA_MAX_LAG: '1h',
  });
}, 60_000);

afterAll(async () => {
  await replicaAdmin?.end();
  await standby?.destroy();
  await primary?.destroy();
});

async function graph(headers: Record<string, string>, query: string) {
  const response = await fetch(`${served.url}/api/graphql`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const LIST = '{ contacts(first: 100) { edges { node { name } } } }';

/** The names `headers`'s caller lists; fails on anything but a 200 with data. */
async function names(headers: Record<string, string>, query = LIST): Promise<string[]> {
  const { status, body } = await graph(headers, query);
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

async function create(headers: Record<string, string>, name: string): Promise<void> {
  const { status, body } = await graph(
    headers,
    `mutation { createContact(input: { name: "${name}" }) { id } }`,
  );
  expect({ status, errors: body.errors }).toEqual({ status: 200, errors: undefined });
}

describe('svc serve with a streaming replica', () => {
  test('a list reads the replica; the caller that wrote reads its write from the primary; other operations read the primary', async () => {
    await create(writer, 'before the pause');
    await waitFor(
      'the replica to replay it',
      async () =>
        (await replicaAdmin`select 1 from contacts where name = 'before the pause'`).length > 0,
    );
    await replicaAdmin`select pg_wal_replay_pause()`;
    try {
      await create(writer, 'while paused');
      // The replica serves the reader's lists (once the service has measured it caught up).
      await waitFor('the reader to be served by the replica', async () => {
        const listed = await names(reader);
        return listed.includes('before the pause') && !listed.includes('while paused');
      });
      // Read-your-writes: the writer's own list comes from the primary.
      expect(await names(writer)).toContain('while paused');
      // The MCP tools read the replica too; the writer's, the primary.
      expect(await found(reader, 'paus')).toEqual(['before the pause']);
      expect(await found(writer, 'paus')).toEqual(['before the pause', 'while paused']);
      // An operation that is not only lists reads the primary, whoever asks.
      expect(await names(reader, `{ me { id } ${LIST.slice(1)}`)).toContain('while paused');
    } finally {
      await replicaAdmin`select pg_wal_replay_resume()`;
    }
    await waitFor('the replica to catch up', async () =>
      (await names(reader)).includes('while paused'),
    );
  });

  test('when the replica goes down, reads fall back to the primary, never answering INTERNAL', async () => {
    await standby.stop('immediate');
    await create(writer, 'after the replica went');
    const answers: number[] = [];
    await waitFor('the reader to be served by the primary', async () => {
      const { status, body } = await graph(reader, LIST);
      answers.push(status);
      if (status !== 200) {
        expect(body.errors).toEqual([
          expect.objectContaining({
            extensions: expect.objectContaining({ code: 'UNAVAILABLE' }) as unknown,
          }),
        ]);
        return false;
      }
      const data = body.data as { contacts: { edges: { node: { name: string } }[] } };
      return data.contacts.edges.some((edge) => edge.node.name === 'after the replica went');
    });
    expect(answers.every((status) => status === 200 || status === 503)).toBe(true);
  });
});
