// Invitations (SPEC 2.2, 5, 8.2): invite, resendInvite and acceptInvitation, with the link
// shown to the inviter when no SMTP host is configured and mailed when one is.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { invitations } from '../../src/auth/tables.js';
import type { Db } from '../../src/db/client.js';
import { NAME_MAX } from '../../src/users/rules.js';
import { bearer, createUser, createWorkspace, PASSWORD, tokenFor } from '../support/factories.js';
import { freePort } from '../support/env.js';
import {
  startServiceWithDb,
  startTestService,
  type GraphBody,
  type TestService,
} from '../support/service.js';
import { mailEnv, type TestSmtp } from '../mail/test-smtp.js';
import {
  ACCEPT,
  cookieFrom,
  expectRefusal,
  INVITE,
  invitationsOf,
  linkInvalid,
  LOGIN,
  ME,
  NEW_PASSWORD,
  RESEND,
  staffPluginsDir,
  startMailingService,
  storedUser,
  tokenOf,
  usersWithEmail,
} from './support.js';

function email(): string {
  return `invitee-${randomUUID()}@example.com`;
}

interface Invited {
  id: string;
  email: string;
  link: string | null;
}

function invitedFrom(body: GraphBody): Invited {
  expect(body.errors).toBeUndefined();
  const payload = body.data?.invite ?? body.data?.resendInvite;
  const { user, activationLink } = payload as {
    user: { id: string; email: string };
    activationLink: string | null;
  };
  return { id: user.id, email: user.email, link: activationLink };
}

describe('without SMTP', () => {
  let svc: TestService;
  let db: Db;

  beforeAll(async () => {
    ({ svc, db } = await startServiceWithDb({ plugins: { dir: staffPluginsDir } }));
  });

  afterAll(() => svc.stop());

  async function invite(variables: Record<string, unknown>): Promise<Invited> {
    return invitedFrom((await svc.graph(INVITE, variables)).body);
  }

  test('invite creates a pending member and answers the activation link as a path', async () => {
    const address = email();
    const { body } = await svc.graph(INVITE, { email: ` ${address} `, name: ' Ada ' });
    expect(body.data?.invite).toEqual({
      user: {
        id: expect.any(String),
        email: address,
        name: 'Ada',
        role: 'member',
        capabilities: [],
        pending: true,
        disabled: false,
      },
      activationLink: expect.stringMatching(/^\/invitation#token=i1_[A-Za-z0-9_-]+$/),
    });
    const [stored] = await usersWithEmail(db, address);
    expect(stored?.passwordHash).toBeNull();
  });

  test('the link from the payload activates the account, signs it in, and works once', async () => {
    const invited = await invite({ email: email(), name: 'Grace' });
    const token = tokenOf(invited.link as string);
    const accepted = await svc.anonymous(ACCEPT, { t: token, p: NEW_PASSWORD, n: 'Grace H.' });
    expect(accepted.body.data?.acceptInvitation).toEqual({
      me: { id: invited.id, email: invited.email, name: 'Grace H.', role: 'member' },
    });
    const cookie = cookieFrom(accepted.headers);
    expect((await svc.graph(ME, {}, { cookie })).body.data?.me).toMatchObject({ id: invited.id });
    const login = await svc.anonymous(LOGIN, { e: invited.email, p: NEW_PASSWORD });
    expect(login.body.data?.login).toEqual({ me: { id: invited.id } });

    const again = await svc.anonymous(ACCEPT, { t: token, p: 'another long password' });
    expectRefusal(again.body, linkInvalid);
    expect(again.headers.get('set-cookie')).toBeNull();
  });

  test('invite takes a role, and an empty role invites an account with no role', async () => {
    const admin = await svc.graph(INVITE, { email: email(), name: 'Root', role: 'admin' });
    expect(admin.body.data?.invite).toMatchObject({ user: { role: 'admin' } });
    const none = await svc.graph(INVITE, { email: email(), name: 'Nobody', role: '' });
    expect(none.body.data?.invite).toMatchObject({ user: { role: '', capabilities: [] } });
  });

  test.each([
    [
      'an address that does not parse',
      { email: 'not an address', name: 'X' },
      { code: 'VALIDATION', reason: 'email_invalid', message: 'email address does not parse' },
    ],
    [
      'an address past 254 characters',
      {
        email: `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`,
        name: 'X',
      },
      { code: 'VALIDATION', reason: 'email_invalid', message: 'email address does not parse' },
    ],
    [
      'a blank name',
      { email: 'blank-name@example.com', name: '   ' },
      { code: 'VALIDATION', reason: 'name_required', message: 'an account needs a name' },
    ],
    [
      'a name past the cap',
      { email: 'long-name@example.com', name: 'n'.repeat(NAME_MAX + 1) },
      {
        code: 'VALIDATION',
        reason: 'name_too_long',
        message: `name may be at most ${NAME_MAX} characters`,
        meta: { max: NAME_MAX },
      },
    ],
    [
      'a role the deployment does not declare',
      { email: 'wizard@example.com', name: 'X', role: 'wizard' },
      {
        code: 'VALIDATION',
        reason: 'role_unknown',
        message: 'unknown role: wizard',
        meta: { role: 'wizard' },
      },
    ],
  ])('invite refuses %s and creates nothing', async (_what, variables, refusal) => {
    const { body } = await svc.graph(INVITE, variables);
    expectRefusal(body, refusal);
    expect(await usersWithEmail(db, variables.email)).toEqual([]);
  });

  test('invite refuses an address another account holds, whatever its letter case', async () => {
    const holder = await createUser(db, svc.workspace, { email: 'Taken.Person@Example.com' });
    const { body } = await svc.graph(INVITE, { email: 'taken.person@EXAMPLE.com', name: 'X' });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'email_taken',
      message: 'that email address belongs to another account',
    });
    expect(await usersWithEmail(db, 'taken.person@example.com')).toEqual([holder]);
  });

  test('an address held in another workspace is free in this one', async () => {
    const elsewhere = await createWorkspace(db);
    const address = email();
    await createUser(db, elsewhere, { email: address });
    const invited = await invite({ email: address, name: 'Twin' });
    expect(invited.email).toBe(address);
  });

  test('a user manager cannot invite an admin', async () => {
    const manager = await createUser(db, svc.workspace, { role: 'user_manager' });
    const address = email();
    const { body } = await svc.graph(
      INVITE,
      { email: address, name: 'X', role: 'admin' },
      bearer(await tokenFor(db, manager)),
    );
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'role_beyond_reach',
      message: 'that role is beyond your own',
    });
    expect(await usersWithEmail(db, address)).toEqual([]);
  });

  test('resendInvite answers a new link; the older one stops working', async () => {
    const invited = await invite({ email: email(), name: 'Twice' });
    const resent = invitedFrom((await svc.graph(RESEND, { id: invited.id })).body);
    expect(resent.id).toBe(invited.id);
    expect(resent.link).not.toBe(invited.link);
    const old = await svc.anonymous(ACCEPT, {
      t: tokenOf(invited.link as string),
      p: NEW_PASSWORD,
    });
    expectRefusal(old.body, linkInvalid);
    const fresh = await svc.anonymous(ACCEPT, {
      t: tokenOf(resent.link as string),
      p: NEW_PASSWORD,
    });
    expect(fresh.body.data?.acceptInvitation).toMatchObject({ me: { id: invited.id } });
  });

  test('resendInvite refuses an account that already chose a password', async () => {
    const active = await createUser(db, svc.workspace);
    const { body } = await svc.graph(RESEND, { id: active.id });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'invitation_not_pending',
      message: 'that account has already accepted its invitation',
    });
    expect(await invitationsOf(db, active)).toEqual([]);
  });

  test("resendInvite answers user_not_found for another workspace's invitee", async () => {
    const elsewhere = await createWorkspace(db);
    const stranger = await createUser(db, elsewhere, { password: null });
    const { body } = await svc.graph(RESEND, { id: stranger.id });
    expectRefusal(body, { code: 'NOT_FOUND', reason: 'user_not_found', message: 'user not found' });
    expect(await invitationsOf(db, stranger)).toEqual([]);
  });

  test.each([
    [
      'short',
      'x'.repeat(11),
      {
        reason: 'password_too_short',
        message: 'password must be at least 12 characters',
        meta: { min: 12 },
      },
    ],
    [
      'long',
      'x'.repeat(1025),
      {
        reason: 'password_too_long',
        message: 'password may be at most 1024 characters',
        meta: { max: 1024 },
      },
    ],
  ])('a too %s password is refused and the link still works', async (_what, password, refusal) => {
    const invited = await invite({ email: email(), name: 'Careful' });
    const token = tokenOf(invited.link as string);
    const refused = await svc.anonymous(ACCEPT, { t: token, p: password });
    expectRefusal(refused.body, { code: 'VALIDATION', ...refusal });
    expect((await usersWithEmail(db, invited.email))[0]?.passwordHash).toBeNull();
    const accepted = await svc.anonymous(ACCEPT, { t: token, p: NEW_PASSWORD });
    expect(accepted.body.data?.acceptInvitation).toMatchObject({ me: { id: invited.id } });
  });

  test('acceptInvitation refuses a bad name and leaves the link unspent', async () => {
    const invited = await invite({ email: email(), name: 'Named' });
    const token = tokenOf(invited.link as string);
    const { body } = await svc.anonymous(ACCEPT, { t: token, p: NEW_PASSWORD, n: ' ' });
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'name_required',
      message: 'an account needs a name',
    });
    expect(
      (await invitationsOf(db, { workspaceId: svc.workspace.id, id: invited.id }))[0]?.usedAt,
    ).toBeNull();
  });

  test.each([
    ['a token that is not a link', () => 'i1_nonsense'],
    ['a reset token in place of an invitation', () => 'r1_' + 'A'.repeat(86)],
  ])('acceptInvitation refuses %s', async (_what, token) => {
    const { body } = await svc.anonymous(ACCEPT, { t: token(), p: NEW_PASSWORD });
    expectRefusal(body, linkInvalid);
  });

  test('an expired link is refused and the account stays pending', async () => {
    const invited = await invite({ email: email(), name: 'Late' });
    await db
      .update(invitations)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(
        and(eq(invitations.workspaceId, svc.workspace.id), eq(invitations.userId, invited.id)),
      );
    const { body } = await svc.anonymous(ACCEPT, {
      t: tokenOf(invited.link as string),
      p: NEW_PASSWORD,
    });
    expectRefusal(body, linkInvalid);
    expect((await usersWithEmail(db, invited.email))[0]?.passwordHash).toBeNull();
  });

  test('the link of an invitee disabled meanwhile is refused', async () => {
    const invited = await invite({ email: email(), name: 'Stopped' });
    await svc.graph(
      'mutation ($id: UUID!) { setUserDisabled(userId: $id, disabled: true) { id } }',
      {
        id: invited.id,
      },
    );
    const { body } = await svc.anonymous(ACCEPT, {
      t: tokenOf(invited.link as string),
      p: NEW_PASSWORD,
    });
    expectRefusal(body, linkInvalid);
    const stored = await storedUser(db, { workspaceId: svc.workspace.id, id: invited.id });
    expect(stored?.passwordHash).toBeNull();
  });

  test('a pending invitee cannot sign in before accepting', async () => {
    const invited = await invite({ email: email(), name: 'Pending' });
    const login = await svc.anonymous(LOGIN, { e: invited.email, p: PASSWORD });
    expectRefusal(login.body, {
      code: 'UNAUTHENTICATED',
      reason: 'credentials_invalid',
      message: 'email or password is wrong',
    });
  });
});

describe('with SMTP', () => {
  let svc: TestService;
  let smtp: TestSmtp;

  beforeAll(async () => {
    ({ svc, smtp } = await startMailingService({ SVC_INVITE_TTL: '48h' }));
  });

  afterAll(async () => {
    await svc.stop();
    await smtp.close();
  });

  /** The next mail, which must go to `address`, and the link it carries. */
  async function mailTo(address: string): Promise<{ subject: string; text: string; link: string }> {
    const mail = await smtp.nextMail();
    expect(mail.rcptTo).toEqual([address]);
    const link = /https:\/\/\S+/.exec(mail.text)?.[0] ?? '';
    return { subject: mail.headers.get('subject') ?? '', text: mail.text, link };
  }

  test('an invitation is mailed, accepted with a password, signs in, and works once', async () => {
    const address = email();
    const invited = invitedFrom((await svc.graph(INVITE, { email: address, name: 'Ada' })).body);
    expect(invited.link).toBeNull();

    const mail = await mailTo(address);
    expect(mail.subject).toBe(`${svc.admin.name} invited you to ${svc.workspace.name}`);
    expect(mail.text).toContain('Hello Ada,');
    expect(mail.text).toContain('expires in 2 days');
    expect(mail.link).toMatch(/^https:\/\/crm\.example\.test\/invitation#token=i1_/);

    const accepted = await svc.anonymous(ACCEPT, { t: tokenOf(mail.link), p: NEW_PASSWORD });
    expect(accepted.body.data?.acceptInvitation).toMatchObject({ me: { id: invited.id } });
    const cookie = cookieFrom(accepted.headers);
    expect((await svc.graph(ME, {}, { cookie })).body.data?.me).toMatchObject({ email: address });

    const again = await svc.anonymous(ACCEPT, { t: tokenOf(mail.link), p: NEW_PASSWORD });
    expectRefusal(again.body, linkInvalid);
  });

  test('resendInvite mails a new link and the first one stops working', async () => {
    const address = email();
    const invited = invitedFrom((await svc.graph(INVITE, { email: address, name: 'Bo' })).body);
    const first = await mailTo(address);
    const resent = invitedFrom((await svc.graph(RESEND, { id: invited.id })).body);
    expect(resent.link).toBeNull();
    const second = await mailTo(address);
    expect(second.link).not.toBe(first.link);
    expectRefusal(
      (await svc.anonymous(ACCEPT, { t: tokenOf(first.link), p: NEW_PASSWORD })).body,
      linkInvalid,
    );
    const accepted = await svc.anonymous(ACCEPT, { t: tokenOf(second.link), p: NEW_PASSWORD });
    expect(accepted.body.data?.acceptInvitation).toMatchObject({ me: { id: invited.id } });
  });
});

describe('with a relay that does not answer', () => {
  let svc: TestService;

  beforeAll(async () => {
    // A free port: nothing listens there, so every send fails.
    svc = await startTestService({ env: mailEnv({ port: await freePort() }) });
  });

  afterAll(() => svc.stop());

  test('the invitation is kept and its link comes back for the inviter to pass on', async () => {
    const address = email();
    const invited = invitedFrom((await svc.graph(INVITE, { email: address, name: 'Cy' })).body);
    expect(invited.link).toMatch(/^https:\/\/crm\.example\.test\/invitation#token=i1_/);
    const accepted = await svc.anonymous(ACCEPT, {
      t: tokenOf(invited.link as string),
      p: NEW_PASSWORD,
    });
    expect(accepted.body.data?.acceptInvitation).toMatchObject({ me: { id: invited.id } });
    expect(svc.lines.some((line) => line.msg === 'mail not sent')).toBe(true);
  });
});
