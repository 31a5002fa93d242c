import { spawn } from 'node:child_process';
import { describe, expect, test } from '@jest/globals';
import { finished, runSvc } from '../support/cli.js';
import { svcBin } from '../support/env.js';

const ESCAPE = '\u001b[';

/** `svc <args>` on a real terminal: util-linux `script` gives it a pseudo-terminal. */
function onTerminal(args: string[], env: Record<string, string>) {
  const command = [process.execPath, svcBin, ...args].join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  child.stdin.end();
  return finished(child);
}

describe('svc help', () => {
  test('piped, the help and usage errors carry no colour codes', async () => {
    const [help, commandHelp, unknown] = await Promise.all([
      runSvc(['--help']),
      runSvc(['token:create', '--help']),
      runSvc(['nonsense']),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('USAGE svc check|serve|');
    expect(help.stdout).not.toContain(ESCAPE);
    expect(commandHelp.stdout).toContain('USAGE svc token:create');
    expect(commandHelp.stdout).not.toContain(ESCAPE);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('svc: Unknown command nonsense');
    expect(unknown.stderr).not.toContain(ESCAPE);
  });

  test('on a terminal it is coloured, unless NO_COLOR is set to any value', async () => {
    const [coloured, plain] = await Promise.all([
      onTerminal(['--help'], { TERM: 'xterm-256color' }),
      onTerminal(['--help'], { TERM: 'xterm-256color', NO_COLOR: 'true' }),
    ]);
    expect(coloured.stdout).toContain(`${ESCAPE}1mUSAGE`);
    expect(plain.stdout).toContain('USAGE svc check|serve|');
    expect(plain.stdout).not.toContain(ESCAPE);
  });

  test('says where the database comes from: SVC_DATABASE_URL, else the embedded one', async () => {
    const [main, tokenCreate, migrate, serve] = await Promise.all([
      runSvc(['--help']),
      runSvc(['token:create', '--help']),
      runSvc(['migrate', '--help']),
      runSvc(['serve', '--help']),
    ]);
    // Paragraphs are folded to the width of the help: compare them unfolded.
    const unfolded = (text: string) => text.replace(/\s+/g, ' ');
    expect(unfolded(main.stdout)).toContain(
      'serve and check need SVC_DATABASE_URL. dev uses it, or else starts an embedded PostgreSQL kept in ./.data/postgres. The other commands use SVC_DATABASE_URL, or else, in a folder where npm start (svc dev) made an embedded PostgreSQL, that one',
    );
    for (const command of [tokenCreate, migrate]) {
      expect(unfolded(command.stdout)).toContain(
        'The database is the one SVC_DATABASE_URL names. When it is unset, in a folder where npm start (svc dev) made an embedded PostgreSQL (./.data/postgres), the command uses that one',
      );
    }
    expect(serve.stdout).toContain(
      'on the database SVC_DATABASE_URL names (required; never the embedded one)',
    );
  });

  test('describes dev in a complete sentence', async () => {
    const result = await runSvc(['dev', '--help']);
    expect(result.stdout).toContain(
      'Run a local server with no setup: it uses SVC_DATABASE_URL, or else an embedded PostgreSQL kept in ./.data, makes a first admin and serves the interactive GraphQL page.',
    );
  });
});
