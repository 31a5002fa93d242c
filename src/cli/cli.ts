import { stripVTControlCharacters } from 'node:util';
import { defineCommand, renderUsage, runCommand } from 'citty';
import { serviceVersion } from '../meta/version.js';
import { normaliseArgv } from './argv.js';
import { DATABASE_HELP } from './database.js';
import { CommandError, UsageError } from './errors.js';

/** Commands that work on a database, whose help says where it comes from. */
const DATABASE_COMMANDS: ReadonlySet<string> = new Set([
  'migrate',
  'seed',
  'account:create-admin',
  'account:records',
  'token:create',
  'token:list',
  'workspace:create',
  'workspace:list',
  'workspace:deactivate',
  'workspace:reactivate',
]);

const MAIN_DATABASE_HELP = `DATABASE

  serve and check need SVC_DATABASE_URL. dev uses it, or else starts an embedded PostgreSQL
  kept in ./.data/postgres. The other commands use SVC_DATABASE_URL, or else, in a folder
  where npm start (svc dev) made an embedded PostgreSQL, that one: they say so on stderr and
  start it for the command when npm start is not running.`;

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
  if (!sub) return `${await renderUsage(main)}\n\n${MAIN_DATABASE_HELP}\n`;
  const text = await renderUsage(sub, main);
  return DATABASE_COMMANDS.has(name as string)
    ? `${text.trimEnd()}\n\n${wrap(DATABASE_HELP)}\n`
    : text;
}

/** A paragraph folded at 90 columns and indented like citty's sections. */
function wrap(paragraph: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of paragraph.split(' ')) {
    if (line && line.length + word.length + 1 > 90) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return `DATABASE\n\n${lines.map((text) => `  ${text}`).join('\n')}`;
}

/**
 * citty colours its help and errors unless NO_COLOR=1, TERM=dumb, TEST or CI: escape
 * codes reach a pipe or a file. Colour stays only on a terminal that takes it (Node's
 * hasColors also honours NO_COLOR, NODE_DISABLE_COLORS and FORCE_COLOR).
 */
function forStream(stream: NodeJS.WriteStream, text: string): string {
  return stream.isTTY && stream.hasColors() ? text : stripVTControlCharacters(text);
}

function print(text: string): void {
  console.log(forStream(process.stdout, text));
}

function printError(text: string): void {
  console.error(forStream(process.stderr, text));
}

/** Runs `svc <command>`: exit 0 on success, 1 on failure, 2 on a usage error. */
export async function runCli(rawArgv: readonly string[]): Promise<number> {
  const argv = normaliseArgv(rawArgv);
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    print(await usage(argv));
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
    const err = (error ?? {}) as Error & { code?: string };
    if (error instanceof UsageError || err.name === 'CLIError') {
      printError(`svc: ${err.message}\n\n${await usage(argv)}`);
      return 2;
    }
    if (error instanceof CommandError) {
      printError(`svc: ${err.message}`);
      return 1;
    }
    printError(`svc: ${err.message ?? `failed: ${String(error)}`}`);
    return 1;
  }
}
