import { defineCommand, renderUsage, runCommand } from 'citty';
import { serviceVersion } from '../meta/version.js';
import { normaliseArgv } from './argv.js';
import { CommandError, UsageError } from './errors.js';

const main = defineCommand({
  meta: { name: 'svc', version: serviceVersion, description: 'Workspace CRM service' },
  subCommands: {
    check: () => import('./commands/check.js').then((m) => m.default),
    serve: () => import('./commands/serve.js').then((m) => m.default),
    migrate: () => import('./commands/migrate.js').then((m) => m.default),
    dev: () => import('./commands/dev.js').then((m) => m.default),
    seed: () => import('./commands/seed.js').then((m) => m.default),
    'account:create-admin': () =>
      import('./commands/account-create-admin.js').then((m) => m.default),
    'account:records': () => import('./commands/account-records.js').then((m) => m.default),
    'token:create': () => import('./commands/token-create.js').then((m) => m.default),
    'token:list': () => import('./commands/token-list.js').then((m) => m.default),
    'workspace:create': () => import('./commands/workspace-create.js').then((m) => m.default),
    'workspace:list': () => import('./commands/workspace-list.js').then((m) => m.default),
    'workspace:deactivate': () =>
      import('./commands/workspace-deactivate.js').then((m) => m.default),
    'workspace:reactivate': () =>
      import('./commands/workspace-reactivate.js').then((m) => m.default),
  },
});

async function usage(argv: string[]): Promise<string> {
  const name = argv.find((arg) => !arg.startsWith('-'));
  const subCommands = main.subCommands as Record<
    string,
    () => Promise<Parameters<typeof renderUsage>[0]>
  >;
  const sub = name && subCommands[name] ? await subCommands[name]() : null;
  return sub ? renderUsage(sub, main) : renderUsage(main);
}

/** Runs `svc <command>`: exit 0 on success, 1 on failure, 2 on a usage error. */
export async function runCli(rawArgv: readonly string[]): Promise<number> {
  const argv = normaliseArgv(rawArgv);
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    console.log(await usage(argv));
    return argv.length === 0 ? 2 : 0;
  }
  if (argv.length === 1 && argv[0] === '--version') {
    console.log(serviceVersion);
    return 0;
  }
  try {
    await runCommand(main, { rawArgs: argv });
    return 0;
  } catch (error) {
    const err = error as Error & { code?: string };
    if (error instanceof UsageError || err.name === 'CLIError') {
      console.error(`svc: ${err.message}\n\n${await usage(argv)}`);
      return 2;
    }
    if (error instanceof CommandError) {
      console.error(`svc: ${err.message}`);
      return 1;
    }
    console.error(`svc: ${err.message ?? String(error)}`);
    return 1;
  }
}
