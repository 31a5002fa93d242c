import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { coreMigrations } from '../../src/db/migrate.js';
import { refusePlugin } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { loadPlugins, stopPlugins, type LoadedPlugin } from '../../src/plugin-host/host.js';
import { migrateAll } from '../../src/server.js';
import { fixturePluginsDir, repoRoot } from '../support/env.js';
import { captureLogger, startTestService, type TestService } from '../support/service.js';
import { lifecycle } from '../fixtures/plugins/probe/index.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: { dir: fixturePluginsDir } });
});

afterAll(() => svc.stop());

describe('loading', () => {
  test('a plugin is started before the server takes requests', () => {
    expect(lifecycle).toEqual(['start']);
  });

  test('its declared reasons become refusals with their code', () => {
    const error = refusePlugin('probe_refused', { why: 'x' });
    expect(error.extensions).toEqual({
      code: 'CONFLICT',
      reason: 'probe_refused',
      meta: { why: 'x' },
    });
  });

  test('a server refuses to start with a graphql plugin that has no backend', async () => {
    await expect(loadPlugins({ dir: `${repoRoot}/tests/fixtures/plugins-broken` })).rejects.toThrow(
      'graphql plugins require a backend',
    );
  });
});

describe('migrations', () => {
  test('a plugin migrates its own tables, recorded in its own migrations table', async () => {
    const { sql } = svc.db.database;
    const [table] = await sql`select to_regclass('public.probe_items')::text as name`;
    expect(table?.name).toBe('probe_items');
    const [row] = await sql`select count(*)::int as n from drizzle.__drizzle_migrations_probe`;
    expect(row?.n).toBe(1);
  });

  test('running the migrations again applies nothing', async () => {
    const { log, lines } = captureLogger();
    const plugins = await loadPlugins({ dir: fixturePluginsDir });
    const sets = await migrateAll(svc.db.database, plugins, log);
    expect(sets.map((set) => set.name)).toEqual([coreMigrations.name, 'probe']);
    expect(lines.filter((line) => line.msg === 'migrations applied')).toEqual([]);
  });
});

describe('routes', () => {
  test('a public route is served under /api/plugins/<id>/', async () => {
    const response = await svc.request(`/api/plugins/probe/ping?n=3`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('pong 3');
  });

  test('a route that is not public is refused to a caller without credentials', async () => {
    const response = await svc.request(`/api/plugins/probe/items/42`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: 'authentication required' });
  });

  test('an unknown plugin answers 404', async () => {
    const response = await svc.request(`/api/plugins/nobody/ping`);
    expect(response.status).toBe(404);
  });
});

describe('stopping', () => {
  function plugin(id: string, stop: () => Promise<void>): LoadedPlugin {
    return {
      manifest: { id, name: id, backend: 'index.ts', graphql: false },
      folder: id,
      migrations: null,
      definition: { id, stop },
    };
  }

  test('plugins stop in reverse order', async () => {
    const order: string[] = [];
    await stopPlugins(
      [
        plugin('a', async () => void order.push('a')),
        plugin('b', async () => void order.push('b')),
      ],
      1000,
      silentLogger(),
    );
    expect(order).toEqual(['b', 'a']);
  });

  test('a plugin that does not stop within the stop grace is left behind with a warning', async () => {
    const { log, lines } = captureLogger();
    const started = Date.now();
    await stopPlugins([plugin('stuck', () => new Promise(() => {}))], 50, log);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        plugin: 'stuck',
        msg: 'plugin did not stop within the stop grace',
      }),
    );
  });
});
