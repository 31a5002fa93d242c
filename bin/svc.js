#!/usr/bin/env node
// The `svc` command. The service is TypeScript run through tsx's loader, so a fresh
// clone needs no build step and stack traces point at the sources.
import { setFlagsFromString } from 'node:v8';
import { register } from 'tsx/esm/api';

// npm scripts and `npx svc` run the Node.js the `node` dependency installs; a system
// Node.js older than the supported line is named here instead of failing somewhere inside.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `svc needs Node.js 22.18 or newer (this is ${process.version}); ` +
      'run it through npm (npm start, npx svc …), which uses the Node.js it installed',
  );
  process.exit(1);
}

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

register();
await import('../src/cli/main.ts');
