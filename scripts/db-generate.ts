// npm run db:generate [-- --name <name>]: drizzle-kit migrations for the core's tables and
// for each plugin that keeps tables (plugins/<id>/drizzle.config.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const extra = process.argv.slice(2);
const configs = ['drizzle.config.ts'];
for (const entry of readdirSync(path.join(root, 'plugins'), { withFileTypes: true })) {
  const config = path.join('plugins', entry.name, 'drizzle.config.ts');
  if (entry.isDirectory() && existsSync(path.join(root, config))) configs.push(config);
}
for (const config of configs) {
  console.log(`drizzle-kit generate --config ${config}`);
  execFileSync('npx', ['drizzle-kit', 'generate', '--config', config, ...extra], {
    cwd: root,
    stdio: 'inherit',
  });
}
