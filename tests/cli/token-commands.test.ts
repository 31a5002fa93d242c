import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { User } from '../../src/users/tables.js';
import type { Workspace } from '../../src/workspaces/tables.js';
import { runSvc } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createUser, createWorkspace } from '../support/factories.js';
import { startTestService } from '../support/service.js';

const DAY_MS = 24 * 60 * 60 * 1000;

let db: TestDatabase;
let env: Record<string, string>;
let workspace: Workspace;
let owner: User;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { SVC_DATABASE_URL: db.url };
  workspace = await createWorkspace(db.database.db, `Tokens ${randomBytes(3).toString('hex')}`);
  owner = await createUser(db.database.db, workspace, { role: 'admin' });
});
afterAll(() => db.drop());

interface TokenRow {
  id: string;
  name: string;
  scopes: string[] | null;
  /** Seconds since the epoch; null: never expires. */
  expires_at: number | null;
}

async function tokenNamed(name: string): Promise<TokenRow | undefined> {
  const [row] = await db.database.sql<TokenRow[]>`
    select id, name, scopes, extract(epoch from expires_at)::float8 as expires_at
    from api_tokens where name = ${name}`;
  return row;
}

async function recordsAbout(tokenName: string) {
  return db.database.sql<{ actor: string; command: string; subject: string; detail: unknown }[]>`
    select actor, command, subject, detail from account_records
    where detail->>'tokenName' = ${tokenName}`;
}

function create(name: string, extra: string[] = [], more: Record<string, string> = {}) {
  return runSvc(['token:create', '-email', owner.email, '-name', name, ...extra], {
    ...env,
    ...more,
  });
}

function expectDaysAhead(row: TokenRow | undefined, days: number): void {
  expect(typeof row?.expires_at).toBe('number');
  const ahead = (row?.expires_at as number) * 1000 - Date.now();
  expect(Math.abs(ahead - days * DAY_MS)).toBeLessThan(60_000);
}

describe('svc token:create', () => {
  test('Go-style options and repeated -scope: the secret alone on stdout, stored only as a hash, works as a bearer token, recorded without it', async () => {
    const result = await runSvc(
      [
        'token:create',
        '-email',
        owner.email.toUpperCase(),
        '-name',
        'ci',
        '-scope',
        'contacts:read',
        '-scope',
        'tasks:write',
        '-ttl',
        '7',
        '-as',
        'ops-alice',
      ],
      env,
    );
    expect(result.stderr).toContain('contacts:read, tasks:write');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^a1_[A-Za-z0-9_-]+\n$/);
    const secret = result.stdout.trim();

    const row = await tokenNamed('ci');
    expect(row?.scopes).toEqual(['contacts:read', 'tasks:write']);
    expectDaysAhead(row, 7);
    // No column holds the secret or its random part.
    const [stored] = await db.database.sql<{ text: string }[]>`
      select row_to_json(t)::text as text from api_tokens t where name = 'ci'`;
    const body = secret.slice('a1_'.length);
    expect(stored?.text).not.toContain(body);
    expect(stored?.text).not.toContain(body.slice(-20));

    const records = await recordsAbout('ci');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      actor: 'ops-alice',
      command: 'token:create',
      subject: owner.email,
      detail: { tokenId: row?.id, scopes: ['contacts:read', 'tasks:write'] },
    });
    expect(JSON.stringify(records[0]?.detail)).not.toContain(body.slice(-20));

    const service = await startTestService({ db });
    try {
      const me = await service.graph('{ me { email } }', {}, bearer(secret));
      expect(me.body).toEqual({ data: { me: { email: owner.email } } });
      const users = await service.graph('{ users { edges { node { id } } } }', {}, bearer(secret));
      expect(users.body.errors?.[0]?.message).toBe('scope required: users:read');
    } finally {
      await service.stop();
    }
  });

  test('lifetime: -ttl days or never, SVC_TOKEN_TTL_DAYS as default (0 never), refused unless -ttl is given', async () => {
    const [plain, dashed, fromEnv, zero, refused, refusedWithTtl, zeroTtl] = await Promise.all([
      create('ttl-default', ['-as', 'ops']),
      runSvc(
        ['token:create', '--email', owner.email, '--name=ttl-dashed', '--ttl', 'never', '--as=ops'],
        env,
      ),
      create('ttl-env', [], { SVC_TOKEN_TTL_DAYS: '3' }),
      create('ttl-env-zero', [], { SVC_TOKEN_TTL_DAYS: '0' }),
      create('ttl-refused', [], { SVC_TOKEN_TTL_DAYS: '3d' }),
      create('ttl-refused-given', ['-ttl', '2'], { SVC_TOKEN_TTL_DAYS: '106752' }),
      create('ttl-zero', ['-ttl', '0']),
    ]);
    for (const result of [plain, dashed, fromEnv, zero, refusedWithTtl, zeroTtl]) {
      expect(result.stderr).not.toContain('svc:');
      expect(result.code).toBe(0);
    }
    expectDaysAhead(await tokenNamed('ttl-default'), 90);
    const dashedRow = await tokenNamed('ttl-dashed');
    expect(dashedRow?.expires_at).toBeNull();
    // Without -scope the token holds every area.
    expect(dashedRow?.scopes).toEqual(['*']);
    expectDaysAhead(await tokenNamed('ttl-env'), 3);
    expect((await tokenNamed('ttl-env-zero'))?.expires_at).toBeNull();
    expectDaysAhead(await tokenNamed('ttl-refused-given'), 2);
    expect((await tokenNamed('ttl-zero'))?.expires_at).toBeNull();

    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('SVC_TOKEN_TTL_DAYS must be a whole number from 0 to 106751');
    expect(refused.stdout).toBe('');
    expect(await tokenNamed('ttl-refused')).toBeUndefined();
  });

  test('refusals exit 1 naming the option and reason; usage errors exit 2; neither creates anything', async () => {
    const [malformed, unknownArea, tooLong, noName, badTtl, missingName, unknownOption, noValue] =
      await Promise.all([
        create('bad-1', ['-scope', 'contacts:read', '-scope', 'contacts']),
        create('bad-2', ['-scope', 'planets:read']),
        create('bad-3', ['-ttl', '106752']),
        create('  '),
        create('bad-5', ['-ttl', 'soon']),
        runSvc(['token:create', '-email', owner.email], env),
        create('bad-7', ['-scopes', 'contacts:read']),
        create('bad-8', ['-scope']),
      ]);
    expect([malformed.code, unknownArea.code, tooLong.code, noName.code]).toEqual([1, 1, 1, 1]);
    expect(malformed.stderr).toContain(
      '-scope: scope "contacts" is not area:access (scope_malformed)',
    );
    expect(unknownArea.stderr).toContain('-scope: unknown scope area: planets (area_unknown)');
    expect(tooLong.stderr).toContain('-ttl: a lifetime may be at most 106751 days');
    expect(noName.stderr).toContain('-name: a token needs a name (token_name_required)');

    expect([badTtl.code, missingName.code, unknownOption.code, noValue.code]).toEqual([2, 2, 2, 2]);
    expect(badTtl.stderr).toContain('-ttl takes a whole number of days or never (got "soon")');
    expect(missingName.stderr).toContain('--name');
    expect(unknownOption.stderr).toContain('unknown option -scopes');
    expect(noValue.stderr).toContain('-scope needs a value');

    const [row] = await db.database.sql<{ n: number }[]>`
      select count(*)::int as n from api_tokens where name like 'bad-%' or name = '  '`;
    expect(row?.n).toBe(0);
  });

  test('a refused mail value or record timeout stops it before it changes anything', async () => {
    const [mail, timeout] = await Promise.all([
      create('stopped-mail', ['-ttl', '1'], { SVC_SMTP_PORT: '25' }),
      create('stopped-timeout', [], { SVC_COMMAND_RECORD_TIMEOUT: '300' }),
    ]);
    expect(mail.code).toBe(1);
    expect(mail.stderr).toContain('SVC_SMTP_PORT is set but SVC_SMTP_HOST is not');
    expect(timeout.code).toBe(1);
    expect(timeout.stderr).toContain('SVC_COMMAND_RECORD_TIMEOUT');
    expect(await tokenNamed('stopped-mail')).toBeUndefined();
    expect(await tokenNamed('stopped-timeout')).toBeUndefined();
    expect(await recordsAbout('stopped-mail')).toEqual([]);
  });

  test('a record that outlasts SVC_COMMAND_RECORD_TIMEOUT: exit 1, the token stays', async () => {
    const conn = await db.database.sql.reserve();
    let secret = '';
    try {
      await conn`begin`;
      await conn`lock table account_records in access exclusive mode`;
      const result = await create('slow-record', ['-as', 'ops'], {
        SVC_COMMAND_RECORD_TIMEOUT: '300ms',
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        'but its account-change record was not stored within 300ms (SVC_COMMAND_RECORD_TIMEOUT); the change stays',
      );
      // The secret was still shown: the token exists and is usable.
      expect(result.stdout).toMatch(/^a1_[A-Za-z0-9_-]+\n$/);
      secret = result.stdout.trim();
    } finally {
      await conn`rollback`;
      conn.release();
    }
    expect(await tokenNamed('slow-record')).toMatchObject({ name: 'slow-record' });
    expect(await recordsAbout('slow-record')).toEqual([]);
    const service = await startTestService({ db });
    try {
      const me = await service.graph('{ me { email } }', {}, bearer(secret));
      expect(me.body).toEqual({ data: { me: { email: owner.email } } });
    } finally {
      await service.stop();
    }
  });
});

describe('svc token:list', () => {
  test('lists the account tokens without secrets; those predating scopes only with -all', async () => {
    const lister = await createUser(db.database.db, workspace);
    const made = await runSvc(
      ['token:create', '-email', lister.email, '-name', 'listed', '-scope', 'meta:read'],
      env,
    );
    expect(made.code).toBe(0);
    const secret = made.stdout.trim();
    await db.database.sql`
      insert into api_tokens (workspace_id, user_id, name, scopes, secret_hash)
      values (${workspace.id}, ${lister.id}, 'legacy-token', null, '\\x00'::bytea)`;

    const [plain, all] = await Promise.all([
      runSvc(['token:list', '-email', lister.email], env),
      runSvc(['token:list', '--email', lister.email, '--all'], env),
    ]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^NAME +ID +SCOPES +CREATED +EXPIRES +LAST USED +REVOKED\n/);
    expect(plain.stdout).toMatch(/listed +[0-9a-f-]{36} +meta:read +\S+Z +\S+Z +never +no\n/);
    expect(plain.stdout).not.toContain('legacy-token');
    expect(plain.stderr).toContain('1 token that predates scopes not shown; -all lists it');
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('listed');
    expect(all.stdout).toMatch(/legacy-token +[0-9a-f-]{36} +every area \(predates scopes\)/);
    for (const output of [plain.stdout, all.stdout, plain.stderr, all.stderr]) {
      expect(output).not.toContain(secret.slice(-20));
    }
  });

  test('an address with accounts in several workspaces needs -workspace (usage error naming it)', async () => {
    const email = `twice-${randomBytes(3).toString('hex')}@example.com`;
    const other = await createWorkspace(db.database.db, `Other ${randomBytes(3).toString('hex')}`);
    await createUser(db.database.db, workspace, { email });
    await createUser(db.database.db, other, { email });
    const [ambiguous, byName, byId, unknown] = await Promise.all([
      runSvc(['token:list', '-email', email], env),
      runSvc(['token:list', '-email', email, '-workspace', other.name.toLowerCase()], env),
      runSvc(['token:list', '-email', email, '-workspace', workspace.id], env),
      runSvc(['token:list', '-email', email, '-workspace', 'no such workspace'], env),
    ]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('name one with -workspace');
    expect(byName.code).toBe(0);
    expect(byName.stderr).toContain(`no tokens for ${email} in workspace "${other.name}"`);
    expect(byId.code).toBe(0);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('-workspace: no workspace has the id or name');
    const created = await runSvc(
      ['token:create', '-email', email, '-workspace', other.id, '-name', 'in-other'],
      env,
    );
    expect(created.code).toBe(0);
    const [row] = await db.database.sql<{ workspace_id: string }[]>`
      select workspace_id from api_tokens where name = 'in-other'`;
    expect(row?.workspace_id).toBe(other.id);
  });
});
