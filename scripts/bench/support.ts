// Shared pieces of the benchmarks: a scratch database, the service as a child process,
// and autocannon runs reported side by side with a baseline measured in the same run.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { buildCatalogue } from '../../src/auth/access.js';
import { createApiToken } from '../../src/auth/tokens.js';
import { withDatabaseName, type Db } from '../../src/db/client.js';
import { freePort } from '../../src/dev/free-port.js';
import { createAccount } from '../../src/users/service.js';
import type { User } from '../../src/users/tables.js';
import { createWorkspace } from '../../src/workspaces/service.js';

export { freePort };

export const root = path.resolve(import.meta.dirname, '../..');
export const adminUrl =
  process.env.SVC_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The bench admin's password (a login bench signs in with it). */
export const BENCH_PASSWORD = 'bench password that is long enough';

/**
 * The benches' caller: a new workspace with an admin, `bench@example.com`, and an API
 * token of theirs holding every scope.
 */
export async function benchAdmin(
  db: Db,
): Promise<{ workspaceId: string; user: User; token: string }> {
  const workspace = await createWorkspace(db, { name: 'Bench' });
  const user = await createAccount(db, workspace.id, {
    email: 'bench@example.com',
    name: 'Bench',
    password: BENCH_PASSWORD,
    role: 'admin',
  });
  const { secret } = await createApiToken(db, buildCatalogue([]), {
    workspaceId: workspace.id,
    userId: user.id,
    name: 'bench',
    scopes: null,
    ttlDays: null,
  });
  return { workspaceId: workspace.id, user, token: secret };
}

export async function scratchDatabase(): Promise<{
  name: string;
  url: string;
  drop(): Promise<void>;
}> {
  const name = `svc_bench_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  await admin.end();
  return {
    name,
    url: withDatabaseName(adminUrl, name),
    async drop() {
      const again = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await again.unsafe(`drop database if exists "${name}" with (force)`);
      await again.end();
    },
  };
}

export interface RunningService {
  url: string;
  child: ChildProcess;
  /** Milliseconds from spawning `svc serve` to /api/readyz answering 200. */
  readyMs: number;
  stop(): Promise<void>;
}

/** How long `stop()` lets `svc serve` shut down before killing it. */
const STOP_GRACE_MS = 30_000;

/**
 * OpenTelemetry's variables and SVC_METRICS_ADDR, passed on from the bench's environment:
 * `OTEL_EXPORTER_OTLP_ENDPOINT=… npm run bench` measures the service with tracing on.
 * BENCH_NODE_OPTIONS becomes the service's NODE_OPTIONS (`--cpu-prof`, a heap limit).
 */
function observed(): Record<string, string> {
  const passed = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && (entry[0].startsWith('OTEL_') || entry[0] === 'SVC_METRICS_ADDR'),
    ),
  );
  const nodeOptions = process.env.BENCH_NODE_OPTIONS;
  return nodeOptions ? { ...passed, NODE_OPTIONS: nodeOptions } : passed;
}

/**
 * Spawns `svc serve` of the checkout at `svcRoot` (this one unless given; another lets a
 * bench compare two commits) and polls readiness (every 10 ms) to time the start.
 */
export async function startServe(
  env: Record<string, string>,
  svcRoot = root,
): Promise<RunningService> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(svcRoot, 'bin/svc.js'), 'serve'], {
    cwd: svcRoot,
    env: { PATH: process.env.PATH ?? '', SVC_ADDR: `127.0.0.1:${port}`, ...observed(), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`svc serve exited with ${child.exitCode}`);
    try {
      const response = await fetch(`${url}/api/readyz`);
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const readyMs = performance.now() - started;
  return {
    url,
    child,
    readyMs,
    // A service still busy with work its clients left (a bench of the unfair past) may
    // not finish shutting down: the bench must end all the same.
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

export interface LoadResult {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time (user + system) the serving process spent per request, when its pid is known. */
  cpuMicrosPerRequest?: number;
}

/**
 * CPU time a process has used so far, in microseconds (utime + stime of /proc/<pid>/stat,
 * in clock ticks of 10 ms). Unlike requests a second, it does not move with what the rest
 * of a shared machine is doing.
 */
export function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

export async function load(
  name: string,
  options: {
    url: string;
    body?: string;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    connections?: number;
    seconds?: number;
    /** The serving process: its CPU time per request is measured too. */
    pid?: number;
  },
): Promise<LoadResult> {
  const cpuBefore = options.pid === undefined ? 0 : cpuMicros(options.pid);
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'POST',
    body: options.body,
    headers: { 'content-type': 'application/json', ...options.headers },
    connections: options.connections ?? 32,
    duration: options.seconds ?? 8,
  });
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    ...(options.pid === undefined || result.requests.total === 0
      ? {}
      : { cpuMicrosPerRequest: (cpuMicros(options.pid) - cpuBefore) / result.requests.total }),
  };
}

/** Each row's rate against `baseline`, or against the row's own baseline in `pairs`. */
export function report(
  rows: LoadResult[],
  baseline: LoadResult,
  pairs: Record<string, LoadResult> = {},
): void {
  const lines = rows.map((row) => {
    const ratio = row.requestsPerSecond / (pairs[row.name] ?? baseline).requestsPerSecond;
    const cpu =
      row.cpuMicrosPerRequest === undefined
        ? ''
        : `  cpu ${row.cpuMicrosPerRequest.toFixed(0).padStart(5)} µs/req`;
    return `${row.name.padEnd(40)} ${row.requestsPerSecond.toFixed(0).padStart(8)} req/s  p50 ${String(row.p50).padStart(4)} ms  p99 ${String(row.p99).padStart(4)} ms  ${(ratio * 100).toFixed(0).padStart(4)}% of baseline  errors ${row.errors}${cpu}`;
  });
  console.log(lines.join('\n'));
}
