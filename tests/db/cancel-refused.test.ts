import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import postgres from 'postgres';
import { serveProcesses, type ServedProcess } from '../support/cli.js';
import { databasesForFile } from '../support/database.js';
import { bearerFor, createUser, createWorkspace } from '../support/factories.js';
import { waitFor } from '../support/pg-cluster.js';
import { startProxy, type Proxy } from '../fixtures/postgres-scenario.mjs';

// A request given up while PostgreSQL refuses new connections: the gate asks PostgreSQL to
// cancel its statement on a connection of its own, which is refused. That refusal once
// went unheard and ended `svc serve` (exit code 1, seen when PostgreSQL stopped under load).
const databases = databasesForFile();
const serve = serveProcesses();
let proxy: Proxy;
let served: ServedProcess;
let databaseUrl: string;
let headers: Record<string, string>;
let exited: number | null = null;

beforeAll(async () => {
  const database = await databases();
  databaseUrl = database.url;
  const workspace = await createWorkspace(database.database.db);
  const user = await createUser(database.database.db, workspace);
  headers = {
    ...(await bearerFor(database.database.db, user)),
    'content-type': 'application/json',
  };

  proxy = await startProxy(database.url);
  served = await serve({ SVC_DATABASE_URL: proxy.url });
  served.child.once('exit', (code) => (exited = code));
}, 60_000);

afterAll(() => proxy?.close());

const contactsQuery = JSON.stringify({ query: '{ contacts(first: 1) { edges { node { id } } } }' });

describe('a request given up while PostgreSQL refuses new connections', () => {
  test('the refused cancel request leaves the process serving', async () => {
    const before = await fetch(`${served.url}/api/graphql`, {
      method: 'POST',
      headers,
      body: contactsQuery,
    });
    expect(await before.json()).toEqual({ data: { contacts: { edges: [] } } });

    // The request's statement waits on a lock until the test lets it go.
    const locker = postgres(databaseUrl, { max: 2, onnotice: () => {} });
    const held = await locker.reserve();
    try {
      await held`begin`;
      await held`lock table contacts in access exclusive mode`;
      const givenUp = new AbortController();
      const request = fetch(`${served.url}/api/graphql`, {
        method: 'POST',
        headers,
        body: contactsQuery,
        signal: givenUp.signal,
      }).catch((error: unknown) => error);
      await waitFor('the statement waiting on the lock', async () => {
        const rows = await locker`
          select 1 from pg_stat_activity
          where application_name = 'svc' and wait_event_type = 'Lock'`;
        return rows.length > 0;
      });

      proxy.refuse(true);
      givenUp.abort();
      await request;
      await waitFor('the cancel request, refused', () => proxy.refused() > 0);
      proxy.refuse(false);
    } finally {
      await held`rollback`;
      held.release();
      await locker.end({ timeout: 5 });
    }

    const after = await fetch(`${served.url}/api/graphql`, {
      method: 'POST',
      headers,
      body: contactsQuery,
    });
    expect(await after.json()).toEqual({ data: { contacts: { edges: [] } } });
    expect(exited).toBeNull();
  }, 30_000);
});
