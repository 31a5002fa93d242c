#!/usr/bin/env node
// The `svc` command. The service is TypeScript run through tsx's loader, so a fresh
// clone needs no build step and stack traces point at the sources.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';

const FLOOR = [22, 18];
// Set for the Node.js svc re-runs itself under, so that one never re-runs again.
const REEXEC = 'SVC_NODE_REEXEC';

function tooOld() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  return major < FLOOR[0] || (major === FLOOR[0] && minor < FLOOR[1]);
}

/** The Node.js binary the `node` dependency installed beside svc, or null. */
function installedNode() {
  try {
    const manifest = createRequire(import.meta.url).resolve('node/package.json');
    const binary = path.join(path.dirname(manifest), 'bin', 'node');
    return existsSync(binary) ? binary : null;
  } catch {
    return null;
  }
}

/**
 * Runs svc again under `binary`, as a child with this terminal, and ends as it ends: its
 * exit code, or the signal that ended it. Stop signals sent to this process alone (a
 * service manager's) are passed on; a terminal's reach both, and svc takes a repeat
 * within a second as the same request.
 */
function reexec(binary) {
  const script = fileURLToPath(import.meta.url);
  const child = spawn(binary, [script, ...process.argv.slice(2)], {
    stdio: 'inherit',
    // eslint-disable-next-line n/no-process-env -- passed on whole, as the command was given it
    env: { ...process.env, [REEXEC]: process.version },
  });
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'];
  const forward = (signal) => child.kill(signal);
  for (const signal of signals) process.on(signal, forward);
  child.once('error', (error) => {
    console.error(`svc: cannot run ${binary}: ${error.message}`);
    process.exit(1);
  });
  child.once('exit', (code, signal) => {
    for (const name of signals) process.off(name, forward);
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

// eslint-disable-next-line n/no-process-env -- read, then dropped, before any config is read
const reexecFrom = process.env[REEXEC];
// eslint-disable-next-line n/no-process-env -- as above
delete process.env[REEXEC];

// A system Node.js older than the supported line (`node bin/svc.js`, or `npx svc` through
// the shebang) runs svc under the Node.js its `node` dependency installed; it is refused
// only when there is none.
if (tooOld()) {
  const binary = reexecFrom ? null : installedNode();
  if (!binary) {
    console.error(
      reexecFrom
        ? `svc needs Node.js ${FLOOR.join('.')} or newer; the one its dependencies installed is ${process.version} (svc was run with ${reexecFrom}): reinstall them (npm ci)`
        : `svc needs Node.js ${FLOOR.join('.')} or newer (this is ${process.version}) and finds none installed with it: install its dependencies (npm ci), which bring the Node.js it runs on, or run a newer Node.js`,
    );
    process.exit(1);
  }
  reexec(binary);
} else {
  if (process.argv[2] === 'serve') {
    // `svc serve` is the production process: graphql-js drops its development checks (a
    // cross-realm instanceof walk on every type test) only when NODE_ENV says production,
    // and reads it once, at import. An operator's own NODE_ENV stands.
    // eslint-disable-next-line n/no-process-env -- before any import reads it; config comes later
    process.env.NODE_ENV ??= 'production';
    // Its live heap is small (~45 MB) and its garbage short-lived, but V8 lets the old space
    // fill with promoted garbage up to its first limits before collecting it: 300+ MB under
    // load. Growing the heap by half its live size (V8 picks 1.1x-4x by speed) keeps a
    // served process near 200 MB for the same throughput (docs/performance.md).
    setFlagsFromString('--heap-growing-percent=50');
  }
  // Loaded only on a supported Node.js: tsx and the service may use what older ones lack.
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
