import { describe, expect, test } from '@jest/globals';
import { loadConfig, type Config } from '../../src/config.js';
import { createWorkspaceCache, WorkspaceCache } from '../../src/workspaces/cache.js';
import { acceptsChannelDeliveries } from '../../src/workspaces/service.js';

function config(env: Record<string, string> = {}): Config {
  const { config: loaded, problems } = loadConfig(env);
  expect(problems).toEqual([]);
  return loaded;
}

const HOUR = 3_600_000;

describe('acceptsChannelDeliveries (SVC_TENANT_MACHINE_GRACE)', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');
  const ago = (ms: number) => ({ deactivatedAt: new Date(now - ms) });

  test('an active workspace records deliveries', () => {
    expect(acceptsChannelDeliveries({ deactivatedAt: null }, config(), now)).toBe(true);
    expect(
      acceptsChannelDeliveries(
        { deactivatedAt: null },
        config({ SVC_TENANT_MACHINE_GRACE: '0s' }),
        now,
      ),
    ).toBe(true);
  });

  test('a deactivated one keeps recording within the grace (default 336h), then refuses', () => {
    expect(config().workspaces.machineGraceMs).toBe(336 * HOUR);
    expect(acceptsChannelDeliveries(ago(0), config(), now)).toBe(true);
    expect(acceptsChannelDeliveries(ago(336 * HOUR - 1), config(), now)).toBe(true);
    expect(acceptsChannelDeliveries(ago(336 * HOUR), config(), now)).toBe(false);
    const twoHours = config({ SVC_TENANT_MACHINE_GRACE: '2h' });
    expect(acceptsChannelDeliveries(ago(HOUR), twoHours, now)).toBe(true);
    expect(acceptsChannelDeliveries(ago(3 * HOUR), twoHours, now)).toBe(false);
  });

  test('a grace of 0s refuses at once', () => {
    const zero = config({ SVC_TENANT_MACHINE_GRACE: '0s' });
    expect(zero.workspaces.machineGraceMs).toBe(0);
    expect(acceptsChannelDeliveries(ago(0), zero, now)).toBe(false);
    expect(acceptsChannelDeliveries(ago(-1000), zero, now)).toBe(false);
  });
});

describe('the workspace cache (SVC_TENANTS_HELD, SVC_TENANTS_REFRESH)', () => {
  function counting() {
    const loads: string[] = [];
    let clock = 0;
    const cache = new WorkspaceCache({ held: 2, refreshMs: 1000, now: () => clock });
    const get = (workspace: string, name = 'workspace') =>
      cache.get(workspace, name, () => {
        loads.push(`${workspace}.${name}`);
        return Promise.resolve(`${workspace}.${name}@${clock}`);
      });
    return { cache, loads, get, tick: (ms: number) => (clock += ms) };
  }

  test('holds at most `held` workspaces, dropping the least recently used with all it held', async () => {
    const { cache, loads, get } = counting();
    await get('a');
    await get('a', 'probe.definitions');
    await get('b');
    await get('a'); // a is now the most recent
    await get('c'); // drops b
    expect(cache.size).toBe(2);
    expect(cache.has('a', 'probe.definitions')).toBe(true);
    expect(cache.has('b')).toBe(false);
    expect(cache.has('c')).toBe(true);
    await get('b'); // drops a, its definitions too
    expect(cache.has('a')).toBe(false);
    await get('a', 'probe.definitions');
    expect(loads).toEqual([
      'a.workspace',
      'a.probe.definitions',
      'b.workspace',
      'c.workspace',
      'b.workspace',
      'a.probe.definitions',
    ]);
  });

  test('rereads a value once it is refreshMs old, not before, each value on its own clock', async () => {
    const { loads, get, tick } = counting();
    expect(await get('a')).toBe('a.workspace@0');
    tick(500);
    expect(await get('a', 'defs')).toBe('a.defs@500');
    tick(499);
    expect(await get('a')).toBe('a.workspace@0');
    tick(1);
    expect(await get('a')).toBe('a.workspace@1000');
    expect(await get('a', 'defs')).toBe('a.defs@500');
    tick(500);
    expect(await get('a', 'defs')).toBe('a.defs@1500');
    expect(loads).toEqual(['a.workspace', 'a.defs', 'a.workspace', 'a.defs']);
  });

  test('forget drops one value or the whole workspace, in this cache only', async () => {
    const { cache, loads, get } = counting();
    await get('a');
    await get('a', 'defs');
    cache.forget('a', 'defs');
    expect(cache.has('a', 'defs')).toBe(false);
    expect(cache.has('a', 'workspace')).toBe(true);
    cache.forget('a');
    expect(cache.has('a')).toBe(false);
    await get('a');
    expect(loads).toEqual(['a.workspace', 'a.defs', 'a.workspace']);
  });

  test('concurrent reads share one load; a failed load is not kept', async () => {
    const cache = createWorkspaceCache({ held: 4, refreshMs: 60_000, now: () => 0 });
    let loads = 0;
    const load = () => {
      loads += 1;
      return Promise.resolve(undefined);
    };
    await Promise.all([cache.get('x', 'v', load), cache.get('x', 'v', load)]);
    expect(loads).toBe(1);
    await expect(cache.get('y', 'v', () => Promise.reject(new Error('down')))).rejects.toThrow(
      'down',
    );
    expect(cache.has('y', 'v')).toBe(false);
  });

  test('its size and refresh come from the configuration', () => {
    const { workspaces } = config({ SVC_TENANTS_HELD: '3', SVC_TENANTS_REFRESH: '5s' });
    expect(workspaces).toMatchObject({ held: 3, refreshMs: 5000 });
  });
});
