// npm run generate: writes graph/schema.graphql and each plugin's slice.
// npm run generate:check: exits 1 naming every stale file (CI runs it).
import { readFileSync, mkdirSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { computeArtifacts } from '../src/graph/artifacts.js';
import { stockPluginsDir } from '../src/plugin-host/host.js';

const check = process.argv.includes('--check');
const root = path.resolve(import.meta.dirname, '..');

try {
  const { files } = await computeArtifacts(stockPluginsDir);
  const stale: string[] = [];
  for (const [file, content] of files) {
    const target = path.join(root, file);
    const current = existsSync(target) ? readFileSync(target, 'utf8') : null;
    if (current === content) continue;
    stale.push(file);
    if (!check) {
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, content);
    }
  }
  if (check && stale.length > 0) {
    console.error(`stale generated schema files (run npm run generate):\n  ${stale.join('\n  ')}`);
    process.exit(1);
  }
  console.log(check ? 'generated schema files are current' : `wrote ${stale.length} file(s)`);
} catch (error) {
  console.error(`generate: ${(error as Error).message}`);
  process.exit(1);
}
