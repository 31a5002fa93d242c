import { describe, expect, test } from '@jest/globals';
import { verifyPassword } from '../../src/auth/passwords.js';
import { commandLine, runSvc, runSvcWithStdin } from '../support/cli.js';
import { databasesForFile, type TestDatabase } from '../support/database.js';
import { bearer, createUser, createWorkspace, sessionCookieFor } from '../support/factories.js';
import { startTestService } from '../support/service.js';

const database = databasesForFile();

async function records(db: TestDatabase) {
  return db.database.sql<
    {
      actor: string;
      command: string;
      workspace_id: string | null;
      subject: string | null;
      detail: Record<string, unknown>;
    }[]
  >`select actor, command, workspace_id, subject, detail from account_records order by at, id`;
}

describe('svc workspace:create and workspace:list', () => {
  test('creates a workspace with its first admin in one go, records it, lists counts', async () => {
    const db = await database({ empty: true });
    const env = { SVC_DATABASE_URL: db.url };
    const created = await runSvcWithStdin(
      commandLine('workspace:create', {
        name: ' Acme ',
        'admin-email': 'ada@acme.example',
        'admin-name': 'Ada',
        as: 'ops-bob',
      }),
      env,
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/created workspace "Acme" \(\S+\) with admin ada@acme\.example/);
    const password = /^password: (\S+)$/m.exec(created.stdout)?.[1] as string;
    const [ada] = await db.database.sql<{ password_hash: string; role: string; name: string }[]>`
      select u.password_hash, u.role, w.name from users u join workspaces w on w.id = u.workspace_id`;
    expect(ada).toMatchObject({ role: 'admin', name: 'Acme' });
    expect(await verifyPassword(ada?.password_hash as string, password)).toBe(true);

    const piped = await runSvcWithStdin(
      [
        'workspace:create',
        '--name=Beta',
        '-admin-email',
        'ada@acme.example',
        '-admin-name',
        'Ada B',
      ],
      env,
      'a piped password for beta\n',
    );
    expect(piped.code).toBe(0);
    expect(piped.stdout).not.toContain('password');

    const [duplicate, badEmail, shortPassword, noName] = await Promise.all([
      runSvc(
        [
          'workspace:create',
          '-name',
          'ACME',
          '-admin-email',
          'x@y.example',
          '-admin-name',
          'X',
          '-admin-password',
          'long enough pw',
        ],
        env,
      ),
      runSvc(['workspace:create', '-name', 'G', '-admin-email', 'nope', '-admin-name', 'X'], env),
      runSvc(
        [
          'workspace:create',
          '-name',
          'G',
          '-admin-email',
          'g@y.example',
          '-admin-name',
          'X',
          '-admin-password',
          'short',
        ],
        env,
      ),
      runSvc(
        ['workspace:create', '-name', ' ', '-admin-email', 'g@y.example', '-admin-name', 'X'],
        env,
      ),
    ]);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain('-name: a workspace is already named "ACME"');
    expect(badEmail.code).toBe(1);
    expect(badEmail.stderr).toContain('-admin-email: email address does not parse');
    expect(shortPassword.code).toBe(1);
    expect(shortPassword.stderr).toContain('-admin-password: password must be at least 12');
    expect(noName.code).toBe(2);

    const written = await records(db);
    expect(written).toHaveLength(2);
    expect(written[0]).toMatchObject({
      actor: 'ops-bob',
      command: 'workspace:create',
      subject: 'ada@acme.example',
      detail: { workspaceName: 'Acme', role: 'admin', passwordSource: 'generated' },
    });
    expect(written[1]?.detail).toMatchObject({ passwordSource: 'stdin', actorFrom: 'os-user' });
    expect(JSON.stringify(written)).not.toContain(password);
    expect(JSON.stringify(written)).not.toContain('piped password');

    const acmeId = written[0]?.workspace_id as string;
    await db.database
      .sql`insert into workspace_counts (workspace_id, contacts) values (${acmeId}, 7)`;
    const acme = { id: acmeId };
    await createUser(db.database.db, acme);
    await db.database
      .sql`update workspaces set deactivated_at = '2026-01-02T03:04:05Z' where name = 'Beta'`;

    const listed = await runSvc(['workspace:list'], env);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +STATUS +ACCOUNTS +CONTACTS$/);
    expect(lines[1]).toMatch(new RegExp(`^${acmeId} +Acme +active +2 +7$`));
    expect(lines[2]).toMatch(/ +Beta +deactivated since 2026-01-02T03:04:05Z +1 +0$/);
    expect(await records(db)).toHaveLength(2);

    const stray = await runSvc(['workspace:list', '-as', 'x'], env);
    expect(stray.code).toBe(2);
  });

  test('a refused Workspaces value stops workspace:create after migrating, creating nothing', async () => {
    const db = await database({ empty: true });
    const result = await runSvc(
      commandLine('workspace:create', {
        name: 'N',
        'admin-email': 'n@example.com',
        'admin-name': 'N',
        'admin-password': 'long enough pw',
      }),
      { SVC_DATABASE_URL: db.url, SVC_TENANTS_HELD: '0' },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SVC_TENANTS_HELD');
    const [row] = await db.database.sql<{ n: number }[]>`select count(*)::int as n from workspaces`;
    expect(row?.n).toBe(0);
  });
});

describe('svc workspace:deactivate and workspace:reactivate', () => {
  test("a deactivated workspace's sessions and tokens stop answering at once; reactivating brings the same ones back", async () => {
    const db = await database();
    const service = await startTestService({ db });
    try {
      const env = { SVC_DATABASE_URL: db.url };
      const other = await createWorkspace(db.database.db, 'Other');
      const otherUser = await createUser(db.database.db, other, { role: 'admin' });
      const otherCookie = await sessionCookieFor(db.database.db, otherUser);
      const cookie = await sessionCookieFor(db.database.db, service.admin);
      const me = (headers: Record<string, string>) => service.graph('{ me { id } }', {}, headers);

      expect((await me(bearer(service.adminToken))).body.data).toEqual({
        me: { id: service.admin.id },
      });
      expect((await me({ cookie })).body.data).toEqual({ me: { id: service.admin.id } });

      const off = await runSvc(
        ['workspace:deactivate', '-workspace', service.workspace.name, '-as', 'ops'],
        env,
      );
      expect(off.stderr).toBe('');
      expect(off.code).toBe(0);
      expect(off.stdout).toContain(`deactivated workspace "${service.workspace.name}"`);

      const byToken = await me(bearer(service.adminToken));
      expect(byToken.body.data).toBeNull();
      expect(byToken.body.errors?.[0]).toMatchObject({
        message: 'invalid token',
        extensions: { code: 'UNAUTHENTICATED' },
      });
      const bySession = await me({ cookie });
      expect(bySession.body.data?.me ?? null).toBeNull();
      if (bySession.body.errors) {
        expect(bySession.body.errors[0]?.extensions.code).toBe('UNAUTHENTICATED');
      }
      // Another workspace goes on answering.
      expect((await me({ cookie: otherCookie })).body.data).toEqual({ me: { id: otherUser.id } });

      const again = await runSvc(
        ['workspace:deactivate', '-workspace', service.workspace.id, '-as', 'ops'],
        env,
      );
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('is already deactivated');
      const listed = await runSvc(['workspace:list'], env);
      expect(listed.stdout).toMatch(
        new RegExp(`${service.workspace.id} +\\S.* +deactivated since \\S+ +1 +0`),
      );

      const on = await runSvc(
        ['workspace:reactivate', '-workspace', service.workspace.id.toUpperCase(), '-as', 'ops'],
        env,
      );
      expect(on.code).toBe(0);
      expect(on.stdout).toContain('reactivated workspace');
      expect((await me(bearer(service.adminToken))).body.data).toEqual({
        me: { id: service.admin.id },
      });
      expect((await me({ cookie })).body.data).toEqual({ me: { id: service.admin.id } });

      const [activeAgain, unknown] = await Promise.all([
        runSvc(['workspace:reactivate', '-workspace', service.workspace.id, '-as', 'ops'], env),
        runSvc(['workspace:deactivate', '-workspace', 'No such', '-as', 'ops'], env),
      ]);
      expect(activeAgain.code).toBe(1);
      expect(activeAgain.stderr).toContain('is active; nothing to reactivate');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('-workspace: no workspace has the id or name "No such"');

      const written = await records(db);
      expect(written.map((row) => [row.command, row.actor, row.workspace_id])).toEqual([
        ['workspace:deactivate', 'ops', service.workspace.id],
        ['workspace:reactivate', 'ops', service.workspace.id],
      ]);
      expect(written[0]?.detail).toMatchObject({ workspaceName: service.workspace.name });
    } finally {
      await service.stop();
    }
  });
});
