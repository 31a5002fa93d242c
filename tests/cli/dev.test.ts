import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, describe, expect, test } from '@jest/globals';
import { finished, svc, waitForOutput } from '../support/cli.js';
import { freePort } from '../support/env.js';

const cwd = mkdtempSync(path.join(tmpdir(), 'svc-dev-'));
// As root the cluster runs as a `postgres` user, which must reach the data folder.
chmodSync(cwd, 0o755);
const children: ChildProcessWithoutNullStreams[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(cwd, { recursive: true, force: true });
});

async function startDev() {
  const port = await freePort();
  const child = svc(['dev'], { SVC_ADDR: `127.0.0.1:${port}` }, { cwd });
  children.push(child);
  const done = finished(child);
  const banner = await waitForOutput(child, /stop with Ctrl\+C/);
  return { child, done, banner, url: `http://127.0.0.1:${port}` };
}

async function graph(
  url: string,
  query: string,
  variables: unknown,
  headers: Record<string, string> = {},
) {
  return fetch(`${url}/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
}

describe('svc dev with no SVC_DATABASE_URL', () => {
  test('starts on an embedded PostgreSQL in ./.data, prints a sign-in that works and the interactive page, and keeps the data', async () => {
    const first = await startDev();
    expect(first.banner).toContain(`interactive GraphQL page: ${first.url}/api/graphql`);
    const password = /sign in as admin@example\.com with password (\S+)/.exec(first.banner)?.[1];
    expect(password).toMatch(/^[\w-]{20}$/);
    const page = await fetch(`${first.url}/api/graphql`, { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type')).toContain('text/html');

    const login = await graph(
      first.url,
      'mutation ($email: String!, $password: String!) { login(email: $email, password: $password) { me { email role } } }',
      { email: 'admin@example.com', password },
    );
    expect(await login.json()).toEqual({
      data: { login: { me: { email: 'admin@example.com', role: 'admin' } } },
    });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const version = await graph(first.url, '{ version }', {}, { cookie });
    expect(await version.json()).toEqual({ data: { version: '0.9.0' } });
    first.child.kill('SIGINT');
    const firstEnd = await first.done;
    expect({ code: firstEnd.code, signal: firstEnd.signal }).toEqual({ code: 0, signal: null });

    // A second start reuses the data folder and the same first admin.
    const second = await startDev();
    expect(second.banner).toContain(`with password ${password}`);
    second.child.kill('SIGINT');
    const end = await second.done;
    expect({ code: end.code, signal: end.signal }).toEqual({ code: 0, signal: null });
  }, 90_000);
});
