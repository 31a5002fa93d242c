import { spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { finished, waitForOutput } from '../support/cli.js';
import { databasesForFile } from '../support/database.js';
import { freePort, repoRoot, svcBin } from '../support/env.js';

// `node bin/svc.js …` (or `npx svc …`, through the shebang) under a Node.js older than
// engines names: svc runs again under the Node.js its `node` dependency installed. The
// older Node.js is this one told to say it is 20.19 (a preload), so the test runs the same
// on any machine; bin/svc.js reads process.versions as it would on a real one.

const folder = mkdtempSync(path.join(tmpdir(), 'svc-reexec-'));
const olderNode = path.join(folder, 'older-node.mjs');
writeFileSync(
  olderNode,
  `Object.defineProperty(process.versions, 'node', { value: '20.19.0' });
Object.defineProperty(process, 'version', { value: 'v20.19.0' });
`,
);
const database = databasesForFile();

afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** `node bin/svc.js <args>` under the "older" Node.js, with exactly `env` (plus PATH). */
function underOlderNode(args: string[], env: Record<string, string> = {}, script = svcBin) {
  return spawn(process.execPath, ['--import', olderNode, script, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
}

/** The one child process of `pid` and the Node.js it runs, from /proc (Linux). */
function childOf(pid: number): { pid: number; executable: string } {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ');
  expect(children).toHaveLength(1);
  const child = Number(children[0]);
  return { pid: child, executable: realpathSync(`/proc/${child}/exe`) };
}

describe('under a Node.js older than engines names', () => {
  test('svc runs under the installed Node.js and exits with its code', async () => {
    const version = await finished(underOlderNode(['--version']));
    expect(version).toMatchObject({ code: 0, stdout: '0.9.0\n', stderr: '' });
    // A usage error keeps its own exit code through the second process.
    const usage = await finished(underOlderNode(['no-such-command']));
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('svc: Unknown command no-such-command');
  });

  test('svc serve runs in a second process, and a SIGTERM sent to the first stops it cleanly', async () => {
    const { url } = await database();
    const port = await freePort();
    const child = underOlderNode(['serve'], {
      SVC_DATABASE_URL: url,
      SVC_ADDR: `127.0.0.1:${port}`,
    });
    const done = finished(child);
    await waitForOutput(child, /"msg":"listening"/);
    const served = childOf(child.pid as number);
    // The installed Node.js serves, in a process of its own.
    expect(served.executable).toBe(realpathSync(path.join(repoRoot, 'node_modules/.bin/node')));
    expect((await fetch(`http://127.0.0.1:${port}/api/healthz`)).status).toBe(200);
    // To the first process alone, as a service manager sends it.
    child.kill('SIGTERM');
    const end = await done;
    expect({ code: end.code, signal: end.signal }).toEqual({ code: 0, signal: null });
    expect(end.stdout).toContain('"msg":"stopped"');
    // The second process is gone too.
    expect(() => process.kill(served.pid, 0)).toThrow();
  }, 60_000);

  test('a signal that ends the second process ends the first with it', async () => {
    const { url } = await database();
    const port = await freePort();
    const child = underOlderNode(['serve'], {
      SVC_DATABASE_URL: url,
      SVC_ADDR: `127.0.0.1:${port}`,
    });
    const done = finished(child);
    await waitForOutput(child, /"msg":"listening"/);
    const served = childOf(child.pid as number);
    process.kill(served.pid, 'SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
  }, 60_000);

  test('with no Node.js installed beside it, svc refuses, saying what to do', async () => {
    // The same script where no node_modules holds the `node` package.
    const lone = path.join(folder, 'svc.js');
    copyFileSync(svcBin, lone);
    const result = await finished(underOlderNode(['--version'], {}, lone));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'svc needs Node.js 22.18 or newer (this is v20.19.0) and finds none installed with it: install its dependencies (npm ci), which bring the Node.js it runs on, or run a newer Node.js\n',
    );
  });
});
