import { beforeAll, describe, expect, test } from '@jest/globals';
import { verifyPassword } from '../../src/auth/passwords.js';
import { commandLine, runSvc, runSvcWithStdin, type CliResult } from '../support/cli.js';
import { databasesForFile, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';

const database = databasesForFile();

interface AccountRow {
  email: string;
  role: string | null;
  password_hash: string | null;
  workspace: string;
}

async function accounts(db: TestDatabase): Promise<AccountRow[]> {
  return db.database.sql<AccountRow[]>`
    select u.email, u.role, u.password_hash, w.name as workspace
    from users u join workspaces w on w.id = u.workspace_id order by u.created_at`;
}

async function records(db: TestDatabase) {
  return db.database.sql<
    { actor: string; command: string; subject: string | null; detail: Record<string, unknown> }[]
  >`select actor, command, subject, detail from account_records order by at`;
}

async function migrationsApplied(db: TestDatabase): Promise<number> {
  const [row] = await db.database.sql<{ n: number }[]>`
    select count(*)::int as n from drizzle.__drizzle_migrations`;
  return row?.n ?? 0;
}

describe('svc account:create-admin', () => {
  test('on an empty database: migrates, makes a first workspace, generates and prints a password once, records -as', async () => {
    const db = await database({ empty: true });
    const env = { SVC_DATABASE_URL: db.url };
    const first = await runSvcWithStdin(
      ['account:create-admin', '-email', 'Ada@Example.com', '-name', ' Ada ', '-as', 'ops-bob'],
      env,
    );
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /created admin Ada@Example\.com .* the new workspace "My workspace"/,
    );
    const password = /^password: (\S+)$/m.exec(first.stdout)?.[1] as string;
    expect(password.length).toBeGreaterThanOrEqual(12);
    const [ada] = await accounts(db);
    expect(ada).toMatchObject({
      email: 'Ada@Example.com',
      role: 'admin',
      workspace: 'My workspace',
    });
    expect(await verifyPassword(ada?.password_hash as string, password)).toBe(true);

    // A password piped on stdin; the only workspace is used; the OS user stands in for -as.
    const piped = 'piped password of bob\n';
    const second = await runSvcWithStdin(
      ['account:create-admin', '--email', 'bob@example.com', '--name', 'Bob'],
      env,
      piped,
    );
    expect(second.code).toBe(0);
    expect(second.stdout).not.toContain('password');
    const bob = (await accounts(db)).find((row) => row.email === 'bob@example.com');
    expect(bob?.workspace).toBe('My workspace');
    expect(await verifyPassword(bob?.password_hash as string, piped.trim())).toBe(true);

    const written = await records(db);
    expect(written).toHaveLength(2);
    expect(written[0]).toMatchObject({
      actor: 'ops-bob',
      command: 'account:create-admin',
      subject: 'Ada@Example.com',
      detail: { role: 'admin', workspaceCreated: true, passwordSource: 'generated' },
    });
    expect(written[1]?.detail).toMatchObject({ passwordSource: 'stdin', actorFrom: 'os-user' });
    expect(written[1]?.actor).not.toBe('');
    const recorded = JSON.stringify(written);
    expect(recorded).not.toContain(password);
    expect(recorded).not.toContain('piped password');
  });

  test('refusals name the option; several workspaces need -workspace', async () => {
    const db = await database();
    const env = { SVC_DATABASE_URL: db.url };
    const acme = await createWorkspace(db.database.db, 'Acme');
    const create = (email: string, extra: string[]) =>
      runSvc(['account:create-admin', '-email', email, '-name', 'N', ...extra], env);
    const strong = ['-password', 'twelve chars or more'];

    const [invalid, short, noName, ambiguous, unknown, inAcme] = await Promise.all([
      create('not-an-address', strong),
      create('short@example.com', ['-password', 'too short']),
      runSvc(['account:create-admin', '-email', 'x@example.com', '-name', ' ', ...strong], env),
      (async () => {
        await createWorkspace(db.database.db, 'Beta');
        return create('ambiguous@example.com', strong);
      })(),
      create('nowhere@example.com', [...strong, '-workspace', 'Gamma']),
      create('acme@example.com', [...strong, '-workspace', 'acme', '-as', 'ops']),
    ]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('-email: email address does not parse (email_invalid)');
    expect(short.code).toBe(1);
    expect(short.stderr).toContain(
      '-password: password must be at least 12 characters (password_too_short)',
    );
    expect(noName.code).toBe(1);
    expect(noName.stderr).toContain('-name: an account needs a name (name_required)');
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('-workspace <id or name>');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('-workspace: no workspace has the id or name "Gamma"');
    expect(inAcme.code).toBe(0);
    expect(inAcme.stdout).toContain(`in workspace "Acme" (${acme.id})`);

    const taken = await create('ACME@example.com', [...strong, '-workspace', acme.id]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('-email: that email address belongs to another account');
    expect(taken.stderr).toContain('(email_taken)');
    expect((await accounts(db)).map((row) => row.email)).toEqual(['acme@example.com']);
    expect(await records(db)).toHaveLength(1);
  });

  test('a refused mail value: applies the core migrations, then exits 1 creating nothing', async () => {
    const db = await database({ empty: true });
    const result = await runSvc(
      commandLine('account:create-admin', {
        email: 'a@example.com',
        name: 'A',
        password: 'long enough pw',
      }),
      { SVC_DATABASE_URL: db.url, SVC_SMTP_PORT: '25' },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_SMTP_PORT is set but SVC_SMTP_HOST is not');
    expect(await migrationsApplied(db)).toBeGreaterThan(0);
    expect(await accounts(db)).toEqual([]);
    expect(await records(db)).toEqual([]);
  });

  test('a record that outlasts SVC_COMMAND_RECORD_TIMEOUT: exit 1, the account stays', async () => {
    const db = await database();
    const conn = await db.database.sql.reserve();
    await conn`begin`;
    await conn`lock table account_records in access exclusive mode`;
    const result = await runSvcWithStdin(
      ['account:create-admin', '-email', 'slow@example.com', '-name', 'Slow', '-as', 'ops'],
      { SVC_DATABASE_URL: db.url, SVC_COMMAND_RECORD_TIMEOUT: '300ms' },
    ).finally(async () => {
      await conn`rollback`;
      conn.release();
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'admin slow@example.com was created, but its account-change record was not stored within 300ms (SVC_COMMAND_RECORD_TIMEOUT); the change stays',
    );
    // The generated password was still shown, so the account is usable.
    expect(result.stdout).toMatch(/^password: \S+$/m);
    expect((await accounts(db)).map((row) => row.email)).toEqual(['slow@example.com']);
    expect(await records(db)).toEqual([]);
  });
});

describe('svc seed', () => {
  test('needs -yes; fills an empty database, printing passwords; refuses a second run', async () => {
    const db = await database({ empty: true });
    const env = { SVC_DATABASE_URL: db.url };
    const unconfirmed = await runSvc(['seed'], env);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('run it with -yes');

    const seeded = await runSvc(['seed', '-yes', '-as', 'ops-carol'], env);
    expect(seeded.stderr).toBe('');
    expect(seeded.code).toBe(0);
    expect(seeded.stdout).toContain('seeded workspace "Demo workspace"');
    const admin = /admin: admin@demo\.example\.com .* password: (\S+)/.exec(seeded.stdout)?.[1];
    const member = /member: member@demo\.example\.com .* password: (\S+)/.exec(seeded.stdout)?.[1];
    const rows = await accounts(db);
    expect(rows.map(({ email, role }) => [email, role])).toEqual([
      ['admin@demo.example.com', 'admin'],
      ['member@demo.example.com', 'member'],
    ]);
    expect(await verifyPassword(rows[0]?.password_hash as string, admin as string)).toBe(true);
    expect(await verifyPassword(rows[1]?.password_hash as string, member as string)).toBe(true);
    const [record] = await records(db);
    expect(record).toMatchObject({ actor: 'ops-carol', command: 'seed' });
    expect(JSON.stringify(record)).not.toContain(admin);

    const again = await runSvc(['seed', '--yes'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      'the database already holds the demo workspace "Demo workspace" (',
    );
    expect(again.stderr).toContain('seed runs once per database and changed nothing');
    expect(await accounts(db)).toHaveLength(2);
    expect(await records(db)).toHaveLength(1);
  });

  test('the demo has a few dozen contacts with identities on both channels and tasks over the next weeks, written through the services', async () => {
    const db = await database({ empty: true });
    const seeded = await runSvc(['seed', '-yes'], { SVC_DATABASE_URL: db.url });
    expect(seeded.code).toBe(0);
    expect(seeded.stdout).toContain('  contacts: 36 contacts, 66 identities\n  tasks: 27 tasks\n');
    const { sql } = db.database;
    const contacts = await sql<{ name: string; channels: string[] }[]>`
      select c.name, array_agg(distinct i.channel order by i.channel) as channels
      from contacts c join contact_identities i on i.contact_id = c.id group by c.name`;
    expect(contacts).toHaveLength(36);
    expect(contacts.filter((c) => c.channels.join() === 'email,phone').length).toBeGreaterThan(20);
    // Every write went through a service: each contact, identity and task has its event.
    const events = await sql<{ name: string; n: number }[]>`
      select name, count(*)::int as n from events group by name order by name`;
    expect(events).toEqual([
      { name: 'contact.created', n: 36 },
      { name: 'contact.identity_added', n: 66 },
      { name: 'task.created', n: 27 },
    ]);
    const [counted] = await sql<{ contacts: number }[]>`select contacts::int from workspace_counts`;
    expect(counted?.contacts).toBe(36);
    const tasks = await sql<
      { status: string; days: number; assignee: string; contact: string | null }[]
    >`select t.status, t.due_on - (now() at time zone 'utc')::date as days, u.email as assignee, c.name as contact
      from tasks t join users u on u.id = t.assignee_id left join contacts c on c.id = t.contact_id`;
    const open = tasks.filter((task) => task.status === 'open');
    expect(open.length).toBeGreaterThanOrEqual(20);
    expect(Math.min(...open.map((task) => task.days))).toBeGreaterThanOrEqual(0);
    expect(Math.max(...open.map((task) => task.days))).toBeGreaterThan(21);
    expect(Math.max(...open.map((task) => task.days))).toBeLessThanOrEqual(35);
    expect(new Set(tasks.map((task) => task.assignee))).toEqual(
      new Set(['admin@demo.example.com', 'member@demo.example.com']),
    );
    expect(tasks.filter((task) => task.contact !== null).length).toBeGreaterThan(20);
  });

  test('refuses a database that holds a workspace it did not make, changing nothing', async () => {
    const db = await database();
    await createWorkspace(db.database.db, 'Production');
    const result = await runSvc(['seed', '-yes'], { SVC_DATABASE_URL: db.url });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'the database already holds 1 workspace; seed fills only an empty database',
    );
    expect(await accounts(db)).toEqual([]);
    expect(await records(db)).toEqual([]);
  });

  test('a refused value under Workspaces stops it after the migrations', async () => {
    const db = await database({ empty: true });
    const result = await runSvc(['seed', '-yes'], {
      SVC_DATABASE_URL: db.url,
      SVC_TENANTS_HELD: '0',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_TENANTS_HELD');
    expect(await migrationsApplied(db)).toBeGreaterThan(0);
    expect(await accounts(db)).toEqual([]);
  });
});

describe('svc account:records', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await database();
    env = { SVC_DATABASE_URL: db.url };
    for (const [i, actor] of ['first', 'second', 'third'].entries()) {
      await db.database.sql`
        insert into account_records (at, actor, command, subject, detail)
        values (now() - make_interval(mins => ${3 - i}), ${actor}, 'token:create',
                ${`${actor}@example.com`}, ${JSON.stringify({ n: i })}::jsonb)`;
    }
  });

  test('newest first; -limit, else SVC_COMMAND_RECORDS_LIMIT, refused unless -limit is given', async () => {
    const [every, limited, fromEnv, refused, refusedWithLimit, badLimit] = await Promise.all([
      runSvc(['account:records'], env),
      runSvc(['account:records', '-limit', '1'], env),
      runSvc(['account:records'], { ...env, SVC_COMMAND_RECORDS_LIMIT: '2' }),
      runSvc(['account:records'], { ...env, SVC_COMMAND_RECORDS_LIMIT: '0' }),
      runSvc(['account:records', '--limit=2'], { ...env, SVC_COMMAND_RECORDS_LIMIT: 'all' }),
      runSvc(['account:records', '-limit', 'ten'], env),
    ]);
    const actors = (result: CliResult) =>
      result.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.split(/ +/)[1]);
    expect(every.code).toBe(0);
    expect(every.stdout).toMatch(/^AT +ACTOR +COMMAND +WORKSPACE +SUBJECT +DETAIL\n/);
    expect(every.stdout).toMatch(/third +token:create +- +third@example\.com +\{"n":2\}/);
    expect(actors(every)).toEqual(['third', 'second', 'first']);
    expect(actors(limited)).toEqual(['third']);
    expect(actors(fromEnv)).toEqual(['third', 'second']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('SVC_COMMAND_RECORDS_LIMIT must be a whole number above zero');
    expect(refusedWithLimit.code).toBe(0);
    expect(actors(refusedWithLimit)).toEqual(['third', 'second']);
    expect(badLimit.code).toBe(2);
    expect(badLimit.stderr).toContain('-limit takes a whole number above zero');
  });
});
