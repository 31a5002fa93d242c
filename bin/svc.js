#!/usr/bin/env node
// The `svc` command. The service is TypeScript run through tsx's loader, so a fresh
// clone needs no build step and stack traces point at the sources.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
