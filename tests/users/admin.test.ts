// Roles and capabilities (SPEC 5): the four account-management mutations, their guards
// and every refusal, against a service without SMTP and with the staff fixture's roles.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import { lockWorkspaceUsers } from '../../src/users/admin.js';
import type { User } from '../../src/users/tables.js';
import type { Workspace } from '../../src/workspaces/tables.js';
import {
  bearerFor,
  createSessionUser,
  createTokenUser,
  createUser,
  createWorkspace,
  sessionFor,
} from '../support/factories.js';
import { startServiceWithDb, type TestService } from '../support/service.js';
import {
  expectRefusal,
  INVITE,
  ME,
  RESEND,
  SET_DISABLED,
  SET_ROLE,
  sessionCount,
  staffPluginsDir,
  storedUser,
  usersWithEmail,
} from './support.js';

let svc: TestService;
let db: Db;

beforeAll(async () => {
  ({ svc, db } = await startServiceWithDb({ plugins: { dir: staffPluginsDir } }));
});

afterAll(() => svc.stop());

const adminRequired = {
  code: 'UNAUTHORIZED',
  reason: 'capability_missing',
  message: 'admin required',
  meta: { scope: 'users:write', capability: 'manage_users' },
};
const notFound = { code: 'NOT_FOUND', reason: 'user_not_found', message: 'user not found' };
const beyondReach = {
  code: 'VALIDATION',
  reason: 'role_beyond_reach',
  message: 'that role is beyond your own',
};

/** Headers signing in a new account of the test workspace holding `role`. */
async function caller(
  role: string | null,
): Promise<{ user: User; headers: { authorization: string } }> {
  return createTokenUser(db, svc.workspace, { role });
}

describe('who may manage accounts', () => {
  const operations: Array<[string, (target: User) => [string, Record<string, unknown>]]> = [
    ['invite', () => [INVITE, { email: `guarded-${randomUUID()}@example.com`, name: 'Guarded' }]],
    ['resendInvite', (target) => [RESEND, { id: target.id }]],
    ['setUserDisabled', (target) => [SET_DISABLED, { id: target.id, disabled: true }]],
    ['setUserRole', (target) => [SET_ROLE, { id: target.id, role: 'admin' }]],
  ];

  test.each(operations)(
    '%s is refused to a member with `admin required`, naming the capability',
    async (_name, operation) => {
      const target = await createUser(db, svc.workspace, { password: null });
      const member = await caller('member');
      const [query, variables] = operation(target);
      const { body } = await svc.graph(query, variables, member.headers);
      expectRefusal(body, adminRequired);
      expect(body.errors?.[0]?.extensions.capability).toBe('manage_users');
      expect(await storedUser(db, target)).toEqual(target);
      if ('email' in variables)
        expect(await usersWithEmail(db, variables.email as string)).toEqual([]);
    },
  );

  test.each(operations)('%s is refused to an account with no role', async (_name, operation) => {
    const target = await createUser(db, svc.workspace, { password: null });
    const nobody = await caller(null);
    const [query, variables] = operation(target);
    const { body } = await svc.graph(query, variables, nobody.headers);
    expectRefusal(body, adminRequired);
    expect(body.errors?.[0]?.extensions.capability).toBe('manage_users');
    expect(await storedUser(db, target)).toEqual(target);
  });

  test('an admin token scoped users:write reaches invite', async () => {
    const headers = await bearerFor(db, svc.admin, { scopes: ['users:write'] });
    const { body } = await svc.graph(
      INVITE,
      { email: `scoped-${randomUUID()}@example.com`, name: 'Scoped' },
      headers,
    );
    expect(body.errors).toBeUndefined();
  });

  test('an admin token scoped contacts:read is told about the scope first', async () => {
    const headers = await bearerFor(db, svc.admin, { scopes: ['contacts:read'] });
    const email = `unscoped-${randomUUID()}@example.com`;
    const { body } = await svc.graph(INVITE, { email, name: 'Unscoped' }, headers);
    expectRefusal(body, {
      code: 'UNAUTHORIZED',
      reason: 'scope_missing',
      message: 'scope required: users:write',
      meta: { scope: 'users:write' },
    });
    expect(await usersWithEmail(db, email)).toEqual([]);
  });
});

describe('setUserRole', () => {
  test('an admin makes a member an admin and the answer shows the new capabilities', async () => {
    const member = await createUser(db, svc.workspace);
    const { body } = await svc.graph(SET_ROLE, { id: member.id, role: 'admin' });
    expect(body.data?.setUserRole).toEqual({
      id: member.id,
      role: 'admin',
      capabilities: ['manage_users', 'manage_webhooks', 'erase_records'],
    });
    expect((await storedUser(db, member))?.role).toBe('admin');
  });

  test('an empty role leaves the account with no role and no capabilities', async () => {
    const member = await createUser(db, svc.workspace);
    const { body } = await svc.graph(SET_ROLE, { id: member.id, role: '' });
    expect(body.data?.setUserRole).toEqual({ id: member.id, role: '', capabilities: [] });
    expect((await storedUser(db, member))?.role).toBeNull();
  });

  test('nobody changes its own role', async () => {
    const before = await storedUser(db, svc.admin);
    const { body } = await svc.graph(SET_ROLE, { id: svc.admin.id, role: 'member' });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'self_role_refused',
      message: 'you cannot change your own role',
    });
    expect(await storedUser(db, svc.admin)).toEqual(before);
  });

  test('a role the deployment does not declare is refused, naming it', async () => {
    const member = await createUser(db, svc.workspace);
    const { body } = await svc.graph(SET_ROLE, { id: member.id, role: 'wizard' });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'role_unknown',
      message: 'unknown role: wizard',
      meta: { role: 'wizard' },
    });
    expect(await storedUser(db, member)).toEqual(member);
  });

  test('even an admin cannot grant a plugin role holding a capability it lacks', async () => {
    const member = await createUser(db, svc.workspace);
    const { body } = await svc.graph(SET_ROLE, { id: member.id, role: 'rota_keeper' });
    expectRefusal(body, beyondReach);
    expect(await storedUser(db, member)).toEqual(member);
  });

  test('a user manager grants a role whose capabilities it holds', async () => {
    const manager = await caller('user_manager');
    const member = await createUser(db, svc.workspace);
    const { body } = await svc.graph(
      SET_ROLE,
      { id: member.id, role: 'user_manager' },
      manager.headers,
    );
    expect(body.data?.setUserRole).toEqual({
      id: member.id,
      role: 'user_manager',
      capabilities: ['manage_users'],
    });
  });

  test.each(['admin', 'rota_keeper'])(
    'a user manager cannot write the role %s, which holds more than it does',
    async (role) => {
      const manager = await caller('user_manager');
      const member = await createUser(db, svc.workspace);
      const { body } = await svc.graph(SET_ROLE, { id: member.id, role }, manager.headers);
      expectRefusal(body, beyondReach);
      expect(await storedUser(db, member)).toEqual(member);
    },
  );

  test('a user manager cannot touch an admin, even to demote it', async () => {
    const manager = await caller('user_manager');
    const admin = await createUser(db, svc.workspace, { role: 'admin' });
    const { body } = await svc.graph(SET_ROLE, { id: admin.id, role: 'member' }, manager.headers);
    expectRefusal(body, beyondReach);
    expect(await storedUser(db, admin)).toEqual(admin);
  });

  test('an id naming no account is user_not_found', async () => {
    const { body } = await svc.graph(SET_ROLE, { id: randomUUID(), role: 'member' });
    expectRefusal(body, notFound);
  });

  test("another workspace's account answers exactly as an unknown id, and stays as it was", async () => {
    const elsewhere = await createWorkspace(db);
    const stranger = await createUser(db, elsewhere, { role: 'admin' });
    const unknown = await svc.graph(SET_ROLE, { id: randomUUID(), role: 'member' });
    const foreign = await svc.graph(SET_ROLE, { id: stranger.id, role: 'member' });
    expect(foreign.body).toEqual(unknown.body);
    expectRefusal(foreign.body, notFound);
    expect(await storedUser(db, stranger)).toEqual(stranger);
  });
});

describe('setUserDisabled', () => {
  test('disabling ends every session and stops every token at once', async () => {
    const { user: member, headers: token } = await createTokenUser(db, svc.workspace);
    const cookie = await sessionFor(db, member);
    expect((await svc.graph(ME, {}, token)).body.data?.me).toMatchObject({ id: member.id });
    expect((await svc.graph(ME, {}, cookie)).body.data?.me).toMatchObject({ id: member.id });

    const { body } = await svc.graph(SET_DISABLED, { id: member.id, disabled: true });
    expect(body.data?.setUserDisabled).toEqual({ id: member.id, disabled: true });
    expect(await sessionCount(db, member)).toBe(0);
    expectRefusal((await svc.graph(ME, {}, token)).body, {
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
      message: 'invalid token',
    });
    expectRefusal((await svc.graph(ME, {}, cookie)).body, {
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
      message: 'authentication required',
    });
  });

  test('re-enabling an account lets its token work again', async () => {
    const { user: member, headers: token } = await createTokenUser(db, svc.workspace, {
      disabled: true,
    });
    const { body } = await svc.graph(SET_DISABLED, { id: member.id, disabled: false });
    expect(body.data?.setUserDisabled).toEqual({ id: member.id, disabled: false });
    expect((await svc.graph(ME, {}, token)).body.data?.me).toMatchObject({ id: member.id });
  });

  test('nobody disables its own account', async () => {
    const before = await storedUser(db, svc.admin);
    const { body } = await svc.graph(SET_DISABLED, { id: svc.admin.id, disabled: true });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'self_disable_refused',
      message: 'you cannot disable your own account',
    });
    expect(await storedUser(db, svc.admin)).toEqual(before);
    expect((await svc.graph(ME)).body.data?.me).toMatchObject({ id: svc.admin.id });
  });

  test('a user manager cannot disable an admin', async () => {
    const manager = await caller('user_manager');
    const { user: admin, cookie } = await createSessionUser(db, svc.workspace, { role: 'admin' });
    const { body } = await svc.graph(
      SET_DISABLED,
      { id: admin.id, disabled: true },
      manager.headers,
    );
    expectRefusal(body, beyondReach);
    expect(await storedUser(db, admin)).toEqual(admin);
    expect((await svc.graph(ME, {}, { cookie })).body.data?.me).toMatchObject({ id: admin.id });
  });

  test("another workspace's account is user_not_found and keeps its sessions", async () => {
    const elsewhere = await createWorkspace(db);
    const stranger = await createUser(db, elsewhere);
    await sessionFor(db, stranger);
    const { body } = await svc.graph(SET_DISABLED, { id: stranger.id, disabled: true });
    expectRefusal(body, notFound);
    expect(await storedUser(db, stranger)).toEqual(stranger);
    expect(await sessionCount(db, stranger)).toBe(1);
  });
});

describe('the last account able to manage users', () => {
  /** Waits until `count` sessions of this database wait for an advisory lock. */
  async function lockWaiters(count: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const [row] = await svc.db.database.sql<{ n: number }[]>`
        select count(*)::int as n from pg_locks
        where locktype = 'advisory' and not granted
          and database = (select oid from pg_database where datname = current_database())`;
      if ((row?.n ?? 0) >= count) return;
    }
    throw new Error(`fewer than ${count} requests queued on the workspace lock`);
  }

  async function twoAdmins(): Promise<{
    workspace: Workspace;
    a: User;
    b: User;
    ta: { authorization: string };
    tb: { authorization: string };
  }> {
    const workspace = await createWorkspace(db);
    const a = await createTokenUser(db, workspace, { role: 'admin' });
    const b = await createTokenUser(db, workspace, { role: 'admin' });
    // A pending admin and a disabled admin can manage nobody: they do not count.
    await createUser(db, workspace, { role: 'admin', password: null });
    await createUser(db, workspace, { role: 'admin', disabled: true });
    return { workspace, a: a.user, b: b.user, ta: a.headers, tb: b.headers };
  }

  const writes: Array<[string, (target: User) => [string, Record<string, unknown>]]> = [
    ['demote', (target) => [SET_ROLE, { id: target.id, role: 'member' }]],
    ['disable', (target) => [SET_DISABLED, { id: target.id, disabled: true }]],
  ];

  test.each(writes)(
    'when the last two admins %s each other at once, exactly one write lands',
    async (_name, write) => {
      const { workspace, a, b, ta, tb } = await twoAdmins();
      let calls: Array<ReturnType<TestService['graph']>> = [];
      // Holding the workspace's lock makes both requests pass their guards and queue up.
      await db.transaction(async (tx) => {
        await lockWorkspaceUsers(tx, workspace.id);
        calls = [svc.graph(...write(b), ta), svc.graph(...write(a), tb)];
        await lockWaiters(2);
      });
      const answers = await Promise.all(calls);
      const landed = answers.filter((answer) => answer.body.errors === undefined);
      const refused = answers.filter((answer) => answer.body.errors !== undefined);
      expect(landed).toHaveLength(1);
      expect(refused).toHaveLength(1);
      expectRefusal(refused[0]!.body, {
        code: 'VALIDATION',
        reason: 'last_privileged_refused',
        message: 'the last admin cannot be unseated',
      });
      const after = await Promise.all([storedUser(db, a), storedUser(db, b)]);
      const managers = after.filter((u) => u?.role === 'admin' && u.disabledAt === null);
      expect(managers).toHaveLength(1);
    },
  );

  test('one admin may demote or disable another while it remains', async () => {
    const { b, ta } = await twoAdmins();
    const demoted = await svc.graph(SET_ROLE, { id: b.id, role: 'member' }, ta);
    expect(demoted.body.errors).toBeUndefined();
    const disabled = await svc.graph(SET_DISABLED, { id: b.id, disabled: true }, ta);
    expect(disabled.body.errors).toBeUndefined();
  });
});
