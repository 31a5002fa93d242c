import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll } from '@jest/globals';
import { freePort, repoRoot, svcBin } from './env.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `svc` binary with exactly `env` (plus PATH), so no variable of the
 * developer's shell leaks into a test.
 */
export function svc(
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string } = {},
): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [svcBin, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
}

export function finished(child: ChildProcessWithoutNullStreams): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** `command` then `-<name> <value>` for each option, in order: svc's plain option syntax. */
export function commandLine(command: string, options: Record<string, string>): string[] {
  return [command, ...Object.entries(options).flatMap(([name, value]) => [`-${name}`, value])];
}

/** Runs svc with `input` on stdin, then end of input (runSvc leaves stdin open). */
export function runSvcWithStdin(
  args: string[],
  env: Record<string, string>,
  input = '',
): Promise<CliResult> {
  const child = svc(args, env);
  child.stdin.end(input);
  return finished(child);
}

export function runSvc(
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string } = {},
): Promise<CliResult> {
  return finished(svc(args, env, options));
}

/** Resolves with the output so far once `pattern` shows on stdout or stderr. */
export function waitForOutput(
  child: ChildProcessWithoutNullStreams,
  pattern: RegExp,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) {
        child.stdout.off('data', onData);
        child.stderr.off('data', onData);
        resolve(seen);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('close', (code) => reject(new Error(`exited ${code} before ${pattern}: ${seen}`)));
  });
}

export interface ServedProcess {
  url: string;
  child: ChildProcessWithoutNullStreams;
}

/**
 * A starter of real `svc serve` processes on free loopback ports, each with `env`, all
 * killed after the calling file's tests; call it at module level.
 */
export function serveProcesses(): (env: Record<string, string>) => Promise<ServedProcess> {
  const started: ChildProcessWithoutNullStreams[] = [];
  afterAll(() => {
    for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
  });
  return async (env) => {
    const port = await freePort();
    const child = svc(['serve'], { SVC_ADDR: `127.0.0.1:${port}`, ...env });
    void finished(child);
    started.push(child);
    await waitForOutput(child, /"msg":"listening"/);
    return { url: `http://127.0.0.1:${port}`, child };
  };
}
