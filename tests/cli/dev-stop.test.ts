import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from '@jest/globals';
import { freePort, repoRoot, svcBin } from '../support/env.js';

// Ctrl-C on `npm start` (svc dev on its embedded PostgreSQL), as a terminal sends it: SIGINT
// to the whole foreground process group, which npm also forwards to its script. Each stop
// must end the service's graces first, then the database, and exit 0 within the graces.

const TRIES = 20;
// Short graces keep the 20 tries within CI's time; the bound is their sum plus the
// database's own stop and the process's exit.
const GRACES = {
  SVC_SHUTDOWN_GRACE: '2s',
  SVC_SHUTDOWN_CANCEL_GRACE: '1s',
  SVC_SHUTDOWN_STOP_GRACE: '1s',
};
const GRACES_MS = 4_000;
const STOP_BOUND_MS = GRACES_MS + 6_000;

const folder = mkdtempSync(path.join(tmpdir(), 'svc-dev-stop-'));
// As root the cluster runs as a `postgres` user, which must reach the data folder.
chmodSync(folder, 0o755);
// `npm start` in a folder of its own, so its ./.data is the test's: the script is the
// checkout's own, run by npm with the installed Node.js first on PATH.
const { scripts } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  scripts: { start: string };
};
const start = scripts.start.replace('bin/svc.js', svcBin);
writeFileSync(
  path.join(folder, 'package.json'),
  JSON.stringify({ name: 'svc-dev-stop', private: true, scripts: { start } }),
);
const postmasterPid = path.join(folder, '.data', 'postgres', 'postmaster.pid');
const running = new Set<ChildProcess>();

afterAll(() => {
  for (const child of running) killGroup(child, 'SIGKILL');
  const left = postmaster();
  if (left) process.kill(left, 'SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-(child.pid as number), signal);
  } catch {
    // already gone
  }
}

/** The embedded postmaster's pid, from its lock file, or null when none runs. */
function postmaster(): number | null {
  try {
    return Number(readFileSync(postmasterPid, 'utf8').split('\n')[0]);
  } catch {
    return null;
  }
}

/** A process's group, from /proc (Linux). */
function processGroup(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

interface Stop {
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
  output: string;
  postgresInGroup: boolean;
  lockLeft: boolean;
}

async function startAndInterrupt(
  port: number,
  postgresPort: number,
  delayMs: number,
): Promise<Stop> {
  // detached: a process group of its own, as a shell gives a foreground job.
  const child = spawn('npm', ['start', '--silent'], {
    cwd: folder,
    detached: true,
    env: {
      PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '',
      npm_config_update_notifier: 'false',
      SVC_ADDR: `127.0.0.1:${port}`,
      SVC_DEV_POSTGRES_PORT: String(postgresPort),
      ...GRACES,
    },
  });
  running.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  await new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (!output.includes('stop with Ctrl+C')) return;
      child.stdout?.off('data', onData);
      resolve();
    };
    child.stdout?.on('data', onData);
    void closed.then(() => reject(new Error(`exited before its banner: ${output}`)));
  });
  const pg = postmaster() as number;
  const postgresInGroup = processGroup(pg) === child.pid;
  // A random moment after the banner, with the service answering requests meanwhile.
  const until = Date.now() + delayMs;
  while (Date.now() < until) {
    await fetch(`http://127.0.0.1:${port}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    }).then(
      (response) => response.text(),
      () => '',
    );
  }
  const sent = Date.now();
  killGroup(child, 'SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const end = await Promise.race([
    closed,
    new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), STOP_BOUND_MS))),
  ]);
  clearTimeout(timer);
  const ms = Date.now() - sent;
  if (!end) {
    killGroup(child, 'SIGKILL');
    if (postmaster()) process.kill(pg, 'SIGKILL');
    await closed;
  }
  running.delete(child);
  // Stopped by svc before it exits: no lock file is left behind.
  const lockLeft = existsSync(postmasterPid);
  if (lockLeft && postmaster()) process.kill(pg, 'SIGKILL');
  return {
    code: end?.code ?? null,
    signal: end?.signal ?? null,
    ms,
    output,
    postgresInGroup,
    lockLeft,
  };
}

test(`Ctrl-C on npm start exits 0 within the graces ${TRIES} times out of ${TRIES}, the database stopped after the service`, async () => {
  const started = Date.now();
  const port = await freePort();
  const postgresPort = await freePort();
  const stops: Stop[] = [];
  for (let i = 0; i < TRIES; i += 1) {
    stops.push(await startAndInterrupt(port, postgresPort, Math.floor(Math.random() * 1_000)));
  }
  const clean = stops.filter((stop) => stop.code === 0 && stop.signal === null);
  for (const [i, stop] of stops.entries()) {
    if (stop.code === 0 && !stop.signal) continue;
    const { output, ...figures } = stop;
    process.stderr.write(
      `try ${i + 1}: ${JSON.stringify(figures)}\n${output.split('\n').slice(-4).join('\n')}\n`,
    );
  }
  // The figure the issue asks for, on the test's output.
  process.stderr.write(
    `SIGINT to the group: ${clean.length}/${TRIES} exited 0; slowest stop ${Math.max(...stops.map((s) => s.ms))} ms; ${Date.now() - started} ms in all\n`,
  );
  for (const stop of stops) {
    // The terminal's SIGINT never reaches the database: it runs in a session of its own.
    expect(stop.postgresInGroup).toBe(false);
    expect({ code: stop.code, signal: stop.signal }).toEqual({ code: 0, signal: null });
    expect(stop.ms).toBeLessThan(STOP_BOUND_MS);
    expect(stop.lockLeft).toBe(false);
    expect(stop.output).not.toMatch(/CONNECTION_CLOSED|ECONNREFUSED|terminating connection/);
    // The service logs its stop, then svc stops the database.
    expect(stop.output).toMatch(/INFO: stopped/);
  }
}, 300_000);
