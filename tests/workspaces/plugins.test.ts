// What plugins see of workspaces through the SDK, proven with the probe fixture: its
// per-workspace definitions held under SVC_TENANTS_HELD / SVC_TENANTS_REFRESH (a change
// through one server is seen by another within the refresh), and channel deliveries
// recorded through SVC_TENANT_MACHINE_GRACE after a deactivation.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startService, type Service } from '../../src/server.js';
import { getWorkspaceCached } from '../../src/workspaces/cache.js';
import { setWorkspaceDeactivated } from '../../src/workspaces/service.js';
import { runSvc } from '../support/cli.js';
import { fixturePluginsDir } from '../support/env.js';
import {
  captureLogger,
  startTestService,
  testConfig,
  type TestService,
} from '../support/service.js';

const REFRESH_MS = 3000;
const env = { SVC_TENANTS_REFRESH: `${REFRESH_MS}ms` };
const plugins = { dir: fixturePluginsDir };

let first: TestService;
/** A second server process on the same database, with its own workspace cache. */
let second: Service;

beforeAll(async () => {
  first = await startTestService({ env, plugins });
  second = await startService({
    config: testConfig(env),
    log: captureLogger().log,
    databaseUrl: first.db.url,
    plugins,
    listen: false,
  });
});
afterAll(async () => {
  await second.shutdown();
  await first.stop();
});

/** A server reached in-process: a started service, or a test service's. */
type Server = Pick<Service, 'fetch'>;
const at = (path: string, init?: RequestInit) => new Request(`http://127.0.0.1${path}`, init);

async function graphAt(server: Server, query: string, variables: Record<string, unknown> = {}) {
  const response = await server.fetch(
    at('/api/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...first.adminHeaders },
      body: JSON.stringify({ query, variables }),
    }),
  );
  const body = (await response.json()) as { data?: Record<string, string[]>; errors?: unknown };
  expect(body.errors).toBeUndefined();
  return body.data ?? {};
}

const DEFINITIONS = '{ probeDefinitions }';
const definitionsAt = async (server: Server) =>
  (await graphAt(server, DEFINITIONS)).probeDefinitions ?? [];

describe('plugin definitions in the workspace cache', () => {
  test('a change through one server is seen there at once and by another within SVC_TENANTS_REFRESH', async () => {
    // Taken before the read: the other server's held value is no older than this.
    const heldSince = Date.now();
    expect(await definitionsAt(second)).toEqual([]);

    const defined = await graphAt(first.service, 'mutation { probeDefine(text: "stage") }');
    expect(defined.probeDefine).toEqual(['stage']);
    expect(await definitionsAt(first.service)).toEqual(['stage']);
    // The other server still answers from what it holds...
    expect(await definitionsAt(second)).toEqual([]);

    // ...until its held value is SVC_TENANTS_REFRESH old; then it rereads.
    let seen: string[] = [];
    while (Date.now() - heldSince < REFRESH_MS + 2000) {
      seen = await definitionsAt(second);
      if (seen.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(seen).toEqual(['stage']);
    expect(Date.now() - heldSince).toBeGreaterThanOrEqual(REFRESH_MS);
  });

  test('each workspace holds its own definitions', async () => {
    const other = await startTestService({ env, plugins, db: first.db });
    try {
      const response = await other.graph('mutation { probeDefine(text: "other") }');
      expect(response.body.data?.probeDefine).toEqual(['other']);
      expect(await definitionsAt(first.service)).not.toContain('other');
    } finally {
      await other.service.shutdown();
    }
  });
});

describe('channel deliveries after a deactivation (SVC_TENANT_MACHINE_GRACE)', () => {
  const deliver = (server: Server, workspaceId: string, text: string) =>
    server.fetch(
      at(`/api/plugins/probe/deliveries/${workspaceId}`, { method: 'POST', body: text }),
    );
  async function recorded(workspaceId: string): Promise<string[]> {
    const rows = await first.db.database.sql<{ text: string }[]>`
      select text from probe_items where workspace_id = ${workspaceId} and text like 'delivery:%'
      order by created_at, id`;
    return rows.map((row) => row.text);
  }

  test('are recorded for the grace (default 336h) after a deactivation, then refused', async () => {
    const svc = await startTestService({ plugins, db: first.db });
    const { id } = svc.workspace;
    try {
      expect((await deliver(svc.service, id, 'active')).status).toBe(202);
      await setWorkspaceDeactivated(svc.db.database.db, id, new Date());
      // The workspace's sessions and tokens stop at once...
      const refused = await svc.graph('{ me { id } }');
      expect(refused.body.errors?.[0]?.extensions.reason).toBe('authentication_required');
      // ...while machines keep delivering through the grace.
      const during = await deliver(svc.service, id, 'within the grace');
      expect(during.status).toBe(202);
      expect(await during.json()).toEqual({ recorded: true });

      const graceAgo = new Date(Date.now() - 336 * 3_600_000 - 1000);
      await setWorkspaceDeactivated(svc.db.database.db, id, graceAgo);
      const after = await deliver(svc.service, id, 'past the grace');
      expect(after.status).toBe(410);
      expect(await after.json()).toEqual({ recorded: false });
      expect(await recorded(id)).toEqual(['delivery: active', 'delivery: within the grace']);

      await setWorkspaceDeactivated(svc.db.database.db, id, null);
      expect((await deliver(svc.service, id, 'reactivated')).status).toBe(202);
    } finally {
      await svc.service.shutdown();
    }
  });

  test('0s refuses them the moment an operator deactivates, whatever the cache holds', async () => {
    const svc = await startTestService({
      env: { SVC_TENANT_MACHINE_GRACE: '0s' },
      plugins,
      db: first.db,
    });
    const { id } = svc.workspace;
    try {
      expect((await deliver(svc.service, id, 'active')).status).toBe(202);
      const scope = { database: svc.service.database, config: testConfig() };
      expect((await getWorkspaceCached(scope, id))?.deactivatedAt).toBeNull();

      const command = await runSvc(['workspace:deactivate', '-workspace', id, '-as', 'ops'], {
        SVC_DATABASE_URL: svc.db.url,
      });
      expect(command.code).toBe(0);
      // The cached fields are still the active ones; the delivery check reads the table.
      expect((await getWorkspaceCached(scope, id))?.deactivatedAt).toBeNull();
      const refused = await deliver(svc.service, id, 'after');
      expect(refused.status).toBe(410);
      expect(await recorded(id)).toEqual(['delivery: active']);
    } finally {
      await svc.service.shutdown();
    }
  });

  test('a workspace that does not exist gets none', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-workspace']) {
      expect((await deliver(first.service, id, 'lost')).status).toBe(410);
    }
  });
});
