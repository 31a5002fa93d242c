import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { parse as parseYaml } from 'yaml';
import { loadConfig, type Env } from '../../src/config.js';
import { finished, serveProcesses } from '../support/cli.js';
import { databasesForFile } from '../support/database.js';
import { freePort, repoRoot } from '../support/env.js';

// No docker here: compose.yaml and the Dockerfile are read as files and held to the code's
// own settings (engines, the `node` dependency, the bin, the shutdown graces, SVC_ADDR),
// and the image's healthcheck command is run, as written, against a real svc serve.

const read = (file: string) => readFileSync(path.join(repoRoot, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  engines: { node: string };
  bin: Record<string, string>;
  scripts: Record<string, string>;
};
const lock = JSON.parse(read('package-lock.json')) as {
  packages: Record<string, { version: string }>;
};

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function dockerfile(): Instruction[] {
  const lines = read('Dockerfile')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  return lines.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    return { keyword: (keyword as string).toUpperCase(), args: rest.join(' ') };
  });
}

/** The stages, each its instructions from its FROM on. */
function stages(instructions: Instruction[]): Instruction[][] {
  const found: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') found.push([]);
    found.at(-1)?.push(instruction);
  }
  return found;
}

/** `KEY=value KEY2=value2` of an ENV or ARG instruction. */
function assignments(instructions: Instruction[], keyword: string): Env {
  const env: Env = {};
  for (const { args } of instructions.filter((i) => i.keyword === keyword)) {
    for (const pair of args.split(/\s+/)) {
      const [name, ...value] = pair.split('=');
      env[name as string] = value.join('=');
    }
  }
  return env;
}

/** A compose duration (`30s`, `1m30s`, `1500ms`) in milliseconds. */
function composeDuration(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 };
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)) {
    ms += Number(amount) * (units[unit as string] as number);
  }
  return ms;
}

const database = databasesForFile();
const serve = serveProcesses();
const instructions = dockerfile();
const [build, runtime] = stages(instructions) as [Instruction[], Instruction[]];
const args = assignments(
  instructions.slice(
    0,
    instructions.findIndex((i) => i.keyword === 'FROM'),
  ),
  'ARG',
);
const imageEnv = assignments(runtime, 'ENV');
const compose = parseYaml(read('compose.yaml')) as {
  services: Record<string, Record<string, unknown>>;
};
const svcService = compose.services.svc as {
  build?: string;
  command?: unknown;
  entrypoint?: unknown;
  init?: boolean;
  environment: Env;
  ports: string[];
  stop_grace_period: string;
  depends_on: Record<string, { condition: string }>;
  healthcheck?: unknown;
};

describe('the Dockerfile', () => {
  test('runs the Node.js line the node dependency installs, which engines accepts, in every stage', () => {
    const installed = lock.packages['node_modules/node']?.version as string;
    expect(args.NODE_VERSION).toBe(installed);
    const [major, minor] = installed.split('.').map(Number) as [number, number];
    const [, floorMajor, floorMinor] = /^>=(\d+)\.(\d+)$/.exec(pkg.engines.node)!.map(Number);
    expect(major === floorMajor && minor >= (floorMinor as number)).toBe(true);
    const froms = instructions.filter((i) => i.keyword === 'FROM').map((i) => i.args);
    expect(froms).toHaveLength(2);
    for (const from of froms) expect(from).toMatch(/^node:\$\{NODE_VERSION\}-bookworm-slim\b/);
  });

  test('installs with every install script, the root package’s own included, and keeps no dev dependency', () => {
    const runs = build.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    const install = runs.find((run) => /\bnpm ci\b/.test(run)) as string;
    expect(install).toBeDefined();
    const [ci, prune] = install.split('&&').map((part) => part.trim());
    expect(ci).toMatch(/^npm ci\b/);
    expect(ci).not.toMatch(/--ignore-scripts|--omit/);
    expect(prune).toMatch(/^npm prune --omit=dev\b/);
    // The whole source is there before `npm ci`, so a postinstall finds what it reads (patches).
    const copy = build.findIndex((i) => i.keyword === 'COPY');
    expect(build[copy]?.args).toBe('. .');
    expect(copy).toBeLessThan(build.findIndex((i) => i.args === install));
    expect(read('.dockerignore').split('\n')).toEqual(
      expect.arrayContaining(['node_modules', '.data', '.env']),
    );
  });

  test('runs node bin/svc.js serve as PID 1, as the unprivileged node user', () => {
    const cmd = runtime
      .filter((i) => i.keyword === 'CMD')
      .map((i) => JSON.parse(i.args) as string[]);
    expect(cmd).toEqual([['node', pkg.bin.svc?.replace(/^\.\//, ''), 'serve']]);
    expect(runtime.some((i) => i.keyword === 'ENTRYPOINT')).toBe(false);
    expect(runtime.filter((i) => i.keyword === 'USER').map((i) => i.args)).toEqual(['node']);
    expect(runtime.find((i) => i.keyword === 'STOPSIGNAL')?.args ?? 'SIGTERM').toBe('SIGTERM');
    expect(imageEnv.NODE_ENV).toBe('production');
    const { problems } = loadConfig(imageEnv);
    expect(problems).toEqual([]);
  });

  test('its healthcheck asks /api/readyz on SVC_ADDR’s port, and answers as the service does', async () => {
    const healthcheck = runtime.find((i) => i.keyword === 'HEALTHCHECK')?.args as string;
    const argv = JSON.parse(healthcheck.slice(healthcheck.indexOf('CMD ') + 4)) as string[];
    const port = loadConfig(imageEnv).config.server.addr.port;
    expect(argv.slice(0, 2)).toEqual(['node', '-e']);
    expect(argv[2]).toContain(`'http://127.0.0.1:${port}/api/readyz'`);

    // The same command against a real service, on a free port instead of the image's.
    const { url } = await database();
    const served = await serve({ SVC_DATABASE_URL: url });
    const check = (script: string) =>
      finished(spawn(process.execPath, ['-e', script])).then((result) => result.code);
    const script = (argv[2] as string).replace(`127.0.0.1:${port}`, new URL(served.url).host);
    expect(await check(script)).toBe(0);
    served.child.kill('SIGTERM');
    await finished(served.child);
    expect(await check(script)).toBe(1);
    // Nothing listening at all is unhealthy too.
    const nobody = (argv[2] as string).replace(
      `127.0.0.1:${port}`,
      `127.0.0.1:${await freePort()}`,
    );
    expect(await check(nobody)).toBe(1);
  }, 60_000);
});

describe('compose.yaml', () => {
  test('builds the Dockerfile and runs its command, with Node.js as PID 1', () => {
    expect(svcService.build).toBe('.');
    expect(svcService.command).toBeUndefined();
    expect(svcService.entrypoint).toBeUndefined();
    expect(svcService.init).toBeUndefined();
    // The image's healthcheck stands.
    expect(svcService.healthcheck).toBeUndefined();
  });

  test('serves on the port it publishes, on PostgreSQL 15 once that is healthy', () => {
    const { config, problems } = loadConfig({ ...imageEnv, ...svcService.environment });
    expect(problems).toEqual([]);
    expect(svcService.environment.SVC_ADDR).toBe(imageEnv.SVC_ADDR);
    expect(svcService.ports).toEqual([`${config.server.addr.port}:${config.server.addr.port}`]);
    const database = new URL(config.server.databaseUrl as string);
    const db = compose.services[database.hostname] as { image: string; environment: Env };
    expect(db.image).toBe('postgres:15');
    expect(database.username).toBe(db.environment.POSTGRES_USER);
    expect(database.password).toBe(db.environment.POSTGRES_PASSWORD);
    expect(database.pathname).toBe(`/${db.environment.POSTGRES_DB}`);
    expect(svcService.depends_on).toEqual({
      [database.hostname]: { condition: 'service_healthy' },
    });
  });

  test('waits longer than the service’s shutdown graces before killing it', () => {
    const { http } = loadConfig({ ...imageEnv, ...svcService.environment }).config;
    const graces = http.shutdownGraceMs + http.shutdownCancelGraceMs + http.shutdownStopGraceMs;
    // Room past the graces for closing the pools and the event bus.
    expect(composeDuration(svcService.stop_grace_period)).toBeGreaterThanOrEqual(graces + 5_000);
  });
});
