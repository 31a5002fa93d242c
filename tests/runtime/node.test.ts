import { readFileSync, realpathSync } from 'node:fs';
import { expect, test } from '@jest/globals';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  dependencies: Record<string, string>;
};

/** `>=22.18` as [22, 18]. */
function floorOf(range: string): [number, number] {
  const match = /^>=(\d+)\.(\d+)$/.exec(range);
  if (!match) throw new Error(`engines.node is not a plain floor: ${range}`);
  return [Number(match[1]), Number(match[2])];
}

test('the suite runs on the Node.js engines names, the one the node dependency installs', () => {
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  const [floorMajor, floorMinor] = floorOf(pkg.engines.node);
  expect(major > floorMajor || (major === floorMajor && minor >= floorMinor)).toBe(true);
  const installed = realpathSync(new URL('../../node_modules/.bin/node', import.meta.url));
  expect(realpathSync(process.execPath)).toBe(installed);
  expect(pkg.dependencies.node).toMatch(new RegExp(`^\\^${floorMajor}\\.`));
});
