// Loaded by jest outside its module mapper, so it imports only packages and node builtins
// (and the embedded PostgreSQL's start through tsx).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { tsImport } from 'tsx/esm/api';
import type * as EmbeddedPostgresModule from '../../src/dev/embedded-postgres.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const defaultUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
let adminUrl = process.env.SVC_TEST_DATABASE_URL ?? defaultUrl;

function urlFor(name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * What every database the tests make is named after, `SVC_TEST_DATABASE_PREFIX`, else one
 * of this checkout's own (`svc_` and a hash of its path): the setup drops stale templates
 * of its prefix only, never another checkout's, on a server several may share.
 */
export function testDatabasePrefix(env: Record<string, string | undefined> = process.env): string {
  const set = env.SVC_TEST_DATABASE_PREFIX;
  if (set === undefined || set === '') {
    return `svc_${createHash('sha256').update(root).digest('hex').slice(0, 8)}`;
  }
  // Room in PostgreSQL's 63 bytes for `_template_` and a 16-digit hash; a plain name in SQL.
  if (!/^[a-z][a-z0-9_]{0,29}$/.test(set)) {
    throw new Error(
      `SVC_TEST_DATABASE_PREFIX must be 1 to 30 lowercase letters, digits or underscores, starting with a letter (got ${JSON.stringify(set)})`,
    );
  }
  return set;
}

/**
 * Drops the templates of `prefix` other than `keep` built over an hour ago (a run from this
 * checkout in another terminal may still be cloning a younger one); a database whose name
 * does not start with `<prefix>_template_` is never touched. Answers the dropped names.
 */
export async function dropStaleTemplates(
  admin: postgres.Sql,
  prefix: string,
  keep: string,
): Promise<string[]> {
  const start = `${prefix}_template_`;
  const stale = await admin<{ datname: string }[]>`
    select datname from pg_database
    where left(datname, ${start.length}) = ${start} and datname <> ${keep} and coalesce(
      substring(shobj_description(oid, 'pg_database') from 'built (.*)$')::timestamptz,
      'epoch') < now() - interval '1 hour'`;
  for (const { datname } of stale) {
    await admin.unsafe(`drop database if exists "${datname}" with (force)`);
  }
  return stale.map(({ datname }) => datname);
}

/** Named after every migration file (and the code applying them), so any change rebuilds it. */
function templateName(prefix: string): string {
  const hash = createHash('sha256');
  const dirs = [path.join(root, 'drizzle'), path.join(root, 'src/db')];
  for (const entry of readdirSync(path.join(root, 'plugins'), { withFileTypes: true })) {
    if (entry.isDirectory()) dirs.push(path.join(root, 'plugins', entry.name, 'drizzle'));
  }
  for (const dir of dirs.filter((d) => existsSync(d))) {
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .map((file) => path.join(dir, file))
      .filter((file) => statSync(file).isFile())
      .sort();
    for (const file of files) hash.update(file).update(readFileSync(file));
  }
  return `${prefix}_template_${hash.digest('hex').slice(0, 16)}`;
}

async function reachable(url: string): Promise<boolean> {
  const probe = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await probe`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 });
  }
}

/**
 * No server at 127.0.0.1:5432 and none named: the tests run on an embedded PostgreSQL
 * started as `svc dev` starts its own (src/dev/embedded-postgres.ts), kept in
 * .data/test-postgres on port 54329, so `npm test` works on a fresh clone.
 */
async function startEmbedded(): Promise<string> {
  // Jest loads this file without its module mapper (`./x.js` is not mapped to `./x.ts`), so
  // the source is loaded the way bin/svc.js runs it: through tsx.
  const { startEmbeddedCluster } = (await tsImport(
    '../../src/dev/embedded-postgres.ts',
    import.meta.url,
  )) as typeof EmbeddedPostgresModule;
  const started = await startEmbeddedCluster({
    databaseDir: path.join(root, '.data/test-postgres'),
    port: 54329,
  });
  (globalThis as { __svcStopEmbedded?: () => Promise<void> }).__svcStopEmbedded = started.stop;
  return started.url;
}

/**
 * Migrates a template database once per set of migrations, with the real `svc migrate`;
 * every test file then clones it (CREATE DATABASE ... TEMPLATE) in milliseconds.
 */
export default async function globalSetup(): Promise<void> {
  if (!process.env.SVC_TEST_DATABASE_URL && !(await reachable(adminUrl))) {
    adminUrl = await startEmbedded();
  }
  process.env.SVC_TEST_DATABASE_URL = adminUrl;
  const prefix = testDatabasePrefix();
  process.env.SVC_TEST_DATABASE_PREFIX = prefix;
  const name = templateName(prefix);
  process.env.SVC_TEST_TEMPLATE = name;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    // Concurrent runs (several checkouts, several terminals) build one template at a time.
    await admin`select pg_advisory_lock(hashtext('svc test template'))`;
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (exists) return;
    await dropStaleTemplates(admin, prefix, name);
    const building = `${name}_building`;
    await admin.unsafe(`drop database if exists "${building}" with (force)`);
    await admin.unsafe(`create database "${building}"`);
    await promisify(execFile)(process.execPath, [path.join(root, 'bin/svc.js'), 'migrate'], {
      cwd: root,
      env: { PATH: process.env.PATH, SVC_DATABASE_URL: urlFor(building) },
    });
    // Renamed only once complete, so a failed run never leaves a half-built template.
    await admin.unsafe(`alter database "${building}" rename to "${name}"`);
    const built = new Date().toISOString();
    await admin.unsafe(`comment on database "${name}" is 'svc test template built ${built}'`);
  } finally {
    await admin.end();
  }
}
