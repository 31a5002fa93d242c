import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { readManifest } from '../../src/plugin-host/manifest.js';

function pluginFolder(id: string, manifest: unknown, files: Record<string, string> = {}): string {
  const folder = path.join(mkdtempSync(path.join(tmpdir(), 'svc-plugin-')), id);
  mkdirSync(folder);
  writeFileSync(
    path.join(folder, 'plugin.json'),
    typeof manifest === 'string' ? manifest : JSON.stringify(manifest),
  );
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(folder, name), text);
  return folder;
}

describe('plugin manifests', () => {
  test('a manifest names id, name, backend and graphql', () => {
    const folder = pluginFolder(
      'demo',
      { id: 'demo', name: 'Demo', backend: 'index.ts', graphql: true },
      { 'index.ts': '' },
    );
    expect(readManifest(folder)).toEqual({
      id: 'demo',
      name: 'Demo',
      backend: 'index.ts',
      graphql: true,
    });
  });

  test('graphql without a backend fails with the spec message', () => {
    const folder = pluginFolder('demo', { id: 'demo', name: 'Demo', graphql: true });
    expect(() => readManifest(folder)).toThrow(/^graphql plugins require a backend$/);
  });

  test('a plugin without graphql may have no backend', () => {
    const folder = pluginFolder('demo', { id: 'demo', name: 'Demo' });
    expect(readManifest(folder)).toEqual({
      id: 'demo',
      name: 'Demo',
      backend: null,
      graphql: false,
    });
  });

  test.each([
    [
      'an id that differs from the folder',
      { id: 'other', name: 'X' },
      /must equal its folder name/,
    ],
    ['an id that is not lower-case letters', { id: 'Demo', name: 'X' }, /id must be lower-case/],
    ['a missing name', { id: 'demo' }, /name/],
    [
      'a backend file that does not exist',
      { id: 'demo', name: 'X', backend: 'gone.ts' },
      /does not exist/,
    ],
    ['text that is not JSON', '{ nope', /plugin\.json/],
  ])('%s is refused naming the manifest', (_what, manifest, message) => {
    const folder = pluginFolder('demo', manifest);
    expect(() => readManifest(folder)).toThrow(message);
  });
});
