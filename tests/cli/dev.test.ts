import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { finished, runSvc, svc, waitForOutput } from '../support/cli.js';
import { databasesForFile } from '../support/database.js';
import { freePort } from '../support/env.js';
import { createWorkspace } from '../support/factories.js';
import { LOGIN_OPERATION } from '../../src/graph/interactive-page.js';

const folders: string[] = [];
const children: ChildProcessWithoutNullStreams[] = [];
const database = databasesForFile();

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A folder of its own for `svc dev`'s ./.data. */
function devFolder(): string {
  const cwd = mkdtempSync(path.join(tmpdir(), 'svc-dev-'));
  // As root the cluster runs as a `postgres` user, which must reach the data folder.
  chmodSync(cwd, 0o755);
  folders.push(cwd);
  return cwd;
}

async function startDev(cwd: string, env: Record<string, string> = {}) {
  const port = await freePort();
  const child = svc(['dev'], { SVC_ADDR: `127.0.0.1:${port}`, ...env }, { cwd });
  children.push(child);
  const done = finished(child);
  const banner = await waitForOutput(child, /stop with Ctrl\+C/);
  const stop = async () => {
    child.kill('SIGINT');
    const end = await done;
    expect({ code: end.code, signal: end.signal }).toEqual({ code: 0, signal: null });
  };
  return { child, done, banner, stop, url: `http://127.0.0.1:${port}` };
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

/** Text to find as written inside a RegExp. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const passwordIn = (banner: string) =>
  /sign in as admin@example\.com with password (\S+)/.exec(banner)?.[1];

describe('svc dev with no SVC_DATABASE_URL', () => {
  test('starts on an embedded PostgreSQL in ./.data, prints a sign-in that works, the interactive page and the database, and keeps the data', async () => {
    const cwd = devFolder();
    const postgresPort = await freePort();
    const first = await startDev(cwd, { SVC_DEV_POSTGRES_PORT: String(postgresPort) });
    expect(first.banner).toContain(`interactive GraphQL page: ${first.url}/api/graphql`);
    // On the port SVC_DEV_POSTGRES_PORT names.
    expect(first.banner).toMatch(
      new RegExp(
        `database: postgres://postgres@127\\.0\\.0\\.1:${postgresPort}/svc \\(embedded PostgreSQL in ${literally(path.join(cwd, '.data', 'postgres'))}\\)`,
      ),
    );
    // Every address it prints answers; the first is the interactive page.
    const urls = [
      ...first.banner.slice(first.banner.indexOf('svc is running')).matchAll(/http:\/\/[^\s,]+/g),
    ].map(([url]) => url);
    expect(urls[0]).toBe(`${first.url}/api/graphql`);
    for (const url of urls) {
      const answer = await fetch(url, { headers: { accept: 'text/html' } });
      expect({ url, status: answer.status }).toEqual({ url, status: 200 });
    }
    // The sign-in is the page's own variables form, never a password inside a query.
    expect(first.banner).not.toMatch(/password: "/);
    const variables = JSON.parse(
      /put these in its variables and run it: (\{.*\})$/m.exec(first.banner)?.[1] ?? '',
    ) as Record<string, string>;
    const signedIn = await graph(first.url, LOGIN_OPERATION, variables);
    expect(await signedIn.json()).toMatchObject({
      data: { login: { me: { email: 'admin@example.com' } } },
    });
    const password = passwordIn(first.banner);
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
    await first.stop();

    // A second start reuses the data folder and the same first admin. Listening on every
    // interface, it prints the loopback address a browser reaches.
    const port = await freePort();
    const second = await startDev(cwd, { SVC_ADDR: `0.0.0.0:${port}` });
    expect(second.banner).toContain(`with password ${password}`);
    expect(second.banner).toContain(
      `interactive GraphQL page: http://127.0.0.1:${port}/api/graphql`,
    );
    await second.stop();
  }, 90_000);

  test('a second svc dev in the same folder exits 1 naming the one running and its data folder', async () => {
    const cwd = devFolder();
    const first = await startDev(cwd);
    const second = await runSvc(['dev'], { SVC_ADDR: `127.0.0.1:${await freePort()}` }, { cwd });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      new RegExp(
        `^svc: another svc dev \\(pid ${first.child.pid}\\) is already running with the embedded PostgreSQL in ${literally(path.join(cwd, '.data', 'postgres'))} \\(postgres pid \\d+\\); stop it first\\n$`,
      ),
    );
    // The first one keeps serving.
    expect((await fetch(`${first.url}/api/healthz`)).status).toBe(200);
    await first.stop();
  }, 90_000);
});

describe('commands in a folder with an embedded database and no SVC_DATABASE_URL', () => {
  let cwd: string;
  let postgresDir: string;
  beforeAll(async () => {
    cwd = devFolder();
    postgresDir = path.join(cwd, '.data', 'postgres');
    // npm start once makes the embedded database, its first workspace and admin.
    const dev = await startDev(cwd);
    await dev.stop();
  }, 90_000);

  test('while npm start runs, they use its database and say so on one line of stderr without the password', async () => {
    const dev = await startDev(cwd);
    const port = /database: postgres:\/\/postgres@127\.0\.0\.1:(\d+)\/svc/.exec(dev.banner)?.[1];
    const created = await runSvc(
      ['token:create', '-email', 'admin@example.com', '-name', 'mine'],
      {},
      {
        cwd,
      },
    );
    expect(created.code).toBe(0);
    expect(created.stderr.split('\n')[0]).toBe(
      `svc: SVC_DATABASE_URL is unset; using this folder's embedded database postgres://postgres@127.0.0.1:${port}/svc`,
    );
    expect(created.stderr).not.toContain(':postgres@');
    const me = await graph(
      dev.url,
      '{ me { email } }',
      {},
      {
        authorization: `Bearer ${created.stdout.trim()}`,
      },
    );
    expect(await me.json()).toEqual({ data: { me: { email: 'admin@example.com' } } });
    await dev.stop();
  }, 90_000);

  test('while npm start is stopped, they start the embedded database for themselves and stop it after', async () => {
    const listed = await runSvc(['workspace:list'], {}, { cwd });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/My workspace +active +1 +0/);
    expect(listed.stderr).toMatch(
      /^svc: SVC_DATABASE_URL is unset; started this folder's embedded database for this command at postgres:\/\/postgres@127\.0\.0\.1:\d+\/svc\n$/,
    );
    expect(existsSync(path.join(postgresDir, 'postmaster.pid'))).toBe(false);
  }, 60_000);

  test('svc check still names SVC_DATABASE_URL, which serve needs, and says who uses the embedded one', async () => {
    const result = await runSvc(['check'], {}, { cwd });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `- SVC_DATABASE_URL is required (postgres://user:password@host:port/db); the embedded database in ${postgresDir} serves only svc dev and the other commands run in this folder, never svc serve`,
    );
  });

  test('seed adds the demo workspace beside the first one svc dev made, and refuses a second run', async () => {
    const seeded = await runSvc(['seed', '-yes'], {}, { cwd });
    expect(seeded.code).toBe(0);
    expect(seeded.stdout).toContain('seeded workspace "Demo workspace"');
    expect(seeded.stdout).toContain('contacts: 36 contacts, 66 identities');
    expect(seeded.stdout).toContain('tasks: 27 tasks');
    const again = await runSvc(['seed', '-yes'], {}, { cwd });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already holds the demo workspace "Demo workspace"');
    const listed = await runSvc(['workspace:list'], {}, { cwd });
    expect(listed.stdout).toMatch(/My workspace +active +1 +0\n.*Demo workspace +active +2 +36/);
    // Its accounts cannot collide with svc dev's first admin: that address names one account.
    expect(seeded.stdout).toMatch(
      /admin: admin@demo\.example\.com .*\n  member: member@demo\.example\.com /,
    );
    const token = await runSvc(
      ['token:create', '-email', 'admin@example.com', '-name', 'after seed'],
      {},
      { cwd },
    );
    expect(token.code).toBe(0);
  }, 60_000);
});

describe('svc dev with SVC_DATABASE_URL', () => {
  test('prints a kept password only on the database it was made in', async () => {
    const cwd = devFolder();
    const embedded = await startDev(cwd);
    const embeddedPassword = passwordIn(embedded.banner) as string;
    await embedded.stop();

    // A database whose first workspace this folder did not make: no password to show.
    const elsewhere = await database();
    await createWorkspace(elsewhere.database.db, 'Made elsewhere');
    const other = await startDev(cwd, { SVC_DATABASE_URL: elsewhere.url });
    expect(other.banner).not.toContain(embeddedPassword);
    expect(other.banner).not.toContain('with password');
    expect(other.banner).toContain(
      'this folder keeps no sign-in for this database (its first workspace was made elsewhere)',
    );
    // Named without its password, should the test server's URL carry one.
    const named = new URL(elsewhere.url);
    named.password = '';
    expect(other.banner).toContain(`database: ${named.toString()} (SVC_DATABASE_URL)`);
    await other.stop();

    // An empty database gets a first admin of its own, kept beside the embedded one's.
    const empty = await database({ empty: true });
    const fresh = await startDev(cwd, { SVC_DATABASE_URL: empty.url });
    const freshPassword = passwordIn(fresh.banner);
    expect(freshPassword).toMatch(/^[\w-]{20}$/);
    expect(freshPassword).not.toBe(embeddedPassword);
    await fresh.stop();

    const again = await startDev(cwd, { SVC_DATABASE_URL: empty.url });
    expect(passwordIn(again.banner)).toBe(freshPassword);
    await again.stop();
    const back = await startDev(cwd);
    expect(passwordIn(back.banner)).toBe(embeddedPassword);
    await back.stop();
  }, 120_000);
});
