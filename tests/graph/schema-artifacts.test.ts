import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from '@jest/globals';
import { computeArtifacts, pluginSlice, type SchemaArtifacts } from '../../src/graph/artifacts.js';
import { buildSchema as schemaFromSdl } from 'graphql';
import { stockPluginsDir } from '../../src/plugin-host/host.js';
import { fixturePluginsDir, repoRoot } from '../support/env.js';

let stock: SchemaArtifacts;

beforeAll(async () => {
  stock = await computeArtifacts(stockPluginsDir);
}, 60_000);

describe('generated schema files', () => {
  test('graph/schema.graphql and every plugin slice match what npm run generate writes', () => {
    const stale = [...stock.files].filter(([file, content]) => {
      const target = path.join(repoRoot, file);
      return !existsSync(target) || readFileSync(target, 'utf8') !== content;
    });
    expect(stale.map(([file]) => file)).toEqual([]);
  });

  test('a plugin slice holds its own types and extends core types with what it adds', async () => {
    const fixtures = await computeArtifacts(fixturePluginsDir);
    const slice = fixtures.files.get('tests/fixtures/plugins/probe/graph/schema.graphqls') ?? '';
    expect(slice).toContain('type ProbeEcho {');
    expect(slice).toMatch(/extend type Query \{[^}]*probeEcho\(/s);
    expect(slice).not.toContain('adminSettings');
  }, 60_000);

  test('generation fails with "graphql plugins require a backend" for a graphql plugin without one', async () => {
    await expect(
      computeArtifacts(path.join(repoRoot, 'tests/fixtures/plugins-broken')),
    ).rejects.toThrow('graphql plugins require a backend');
  });

  test('pluginSlice prints only the difference between two schemas', () => {
    const core = schemaFromSdl('type Query { a: Int } type Thing { id: ID! }');
    const full = schemaFromSdl(
      'type Query { a: Int, b: Extra } type Thing { id: ID!, extra: Int! } type Extra { x: Int }',
    );
    const slice = pluginSlice(core, full);
    expect(slice).toContain('type Extra {\n  x: Int\n}');
    expect(slice).toContain('extend type Query {\n  b: Extra\n}');
    expect(slice).toContain('extend type Thing {\n  extra: Int!\n}');
  });
});
