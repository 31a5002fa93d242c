// Prints the SDL of the core plus the named plugins (used by src/graph/artifacts.ts,
// which runs one of these per slice).
import { parseArgs } from 'node:util';
import { buildSchema } from '../src/graph/schema.js';
import { printSorted } from '../src/graph/artifacts.js';
import { loadPlugins } from '../src/plugin-host/host.js';

const { values } = parseArgs({
  options: { dir: { type: 'string' }, only: { type: 'string', default: '' } },
});
try {
  await loadPlugins({ dir: values.dir, only: values.only ? values.only.split(',') : [] });
  process.stdout.write(printSorted(buildSchema()));
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
