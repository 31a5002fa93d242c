// Password resets (SPEC 8.2 "Invitations and resets"): requestPasswordReset and
// resetPassword, the attempts budget per client address, the links cap per account, the
// cooldown per address, and no mail without SMTP.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { passwordResets } from '../../src/auth/tables.js';
import type { Db } from '../../src/db/client.js';
import type { User } from '../../src/users/tables.js';
import { createUser, createWorkspace, PASSWORD, sessionCookieFor } from '../support/factories.js';
import { useTestService, type TestService } from '../support/service.js';
import type { TestSmtp } from '../mail/test-smtp.js';
import {
  cookieFrom,
  expectRefusal,
  linkInvalid,
  LOGIN,
  ME,
  NEW_PASSWORD,
  REQUEST_RESET,
  RESET,
  resetLinksOf,
  sessionCount,
  startMailingService,
  tokenOf,
} from './support.js';

let lastAddress = 0;
/** A client address of its own for each request, so the attempts budget stays out of the way. */
function client(address = `198.51.100.${++lastAddress}`): { 'x-forwarded-for': string } {
  return { 'x-forwarded-for': address };
}

function email(): string {
  return `reset-${randomUUID()}@example.com`;
}

describe('with SMTP', () => {
  let svc: TestService;
  let smtp: TestSmtp;
  let db: Db;

  beforeAll(async () => {
    ({ svc, smtp, db } = await startMailingService({
      SVC_TRUSTED_PROXIES: '127.0.0.1/32',
      SVC_RESET_TTL: '30m',
    }));
  });

  afterAll(async () => {
    await svc.stop();
    await smtp.close();
  });

  async function request(address: string, workspaceId?: string): Promise<void> {
    const { body } = await svc.anonymous(REQUEST_RESET, { e: address, w: workspaceId }, client());
    expect(body).toEqual({ data: { requestPasswordReset: true } });
  }

  /** The next mail, which must go to `address`, and the reset token it carries. */
  async function resetMailTo(
    address: string,
  ): Promise<{ text: string; link: string; token: string }> {
    const mail = await smtp.nextMail();
    // The relay sees the domain in lower case, as nodemailer normalises it.
    expect(mail.rcptTo.map((to) => to.toLowerCase())).toEqual([address.toLowerCase()]);
    expect(mail.headers.get('subject')).toBe('Reset your password');
    const link = /https:\/\/\S+/.exec(mail.text)?.[0] ?? '';
    return { text: mail.text, link, token: tokenOf(link) };
  }

  /** Moves every reset link of `user` `ms` into the past, as if that much time went by. */
  async function age(user: User, ms: number): Promise<void> {
    await db
      .update(passwordResets)
      .set({ createdAt: sql`${passwordResets.createdAt} - make_interval(secs => ${ms / 1000})` })
      .where(
        and(eq(passwordResets.workspaceId, user.workspaceId), eq(passwordResets.userId, user.id)),
      );
  }

  async function liveLinks(user: User): Promise<number> {
    const now = Date.now();
    return (await resetLinksOf(db, user)).filter((l) => !l.usedAt && l.expiresAt.getTime() > now)
      .length;
  }

  test('a reset mails a link that sets the password, signs in and ends the other sessions', async () => {
    const user = await createUser(db, svc.workspace, { email: email(), name: 'Rae' });
    const other = { cookie: await sessionCookieFor(db, user) };
    await request(user.email.toUpperCase());
    const mail = await resetMailTo(user.email);
    expect(mail.link).toMatch(/^https:\/\/crm\.example\.test\/reset-password#token=r1_/);
    expect(mail.text).toContain('Hello Rae,');
    expect(mail.text).toContain('expires in 30 minutes');

    const reset = await svc.anonymous(RESET, { t: mail.token, p: NEW_PASSWORD });
    expect(reset.body.data?.resetPassword).toEqual({ me: { id: user.id } });
    const cookie = cookieFrom(reset.headers);
    expect((await svc.graph(ME, {}, { cookie })).body.data?.me).toMatchObject({ id: user.id });
    expect(await sessionCount(db, user)).toBe(1);
    expectRefusal((await svc.graph(ME, {}, other)).body, {
      code: 'UNAUTHENTICATED',
      reason: 'authentication_required',
      message: 'authentication required',
    });

    const oldLogin = await svc.anonymous(LOGIN, { e: user.email, p: PASSWORD }, client());
    expect(oldLogin.body.errors?.[0]?.extensions.reason).toBe('credentials_invalid');
    const newLogin = await svc.anonymous(LOGIN, { e: user.email, p: NEW_PASSWORD }, client());
    expect(newLogin.body.data?.login).toEqual({ me: { id: user.id } });

    const again = await svc.anonymous(RESET, { t: mail.token, p: 'yet another passphrase' });
    expectRefusal(again.body, linkInvalid);
  });

  test('a too short password is refused and the link still works', async () => {
    const user = await createUser(db, svc.workspace, { email: email() });
    await request(user.email);
    const { token } = await resetMailTo(user.email);
    const short = await svc.anonymous(RESET, { t: token, p: 'short' });
    expectRefusal(short.body, {
      code: 'VALIDATION',
      reason: 'password_too_short',
      message: 'password must be at least 12 characters',
      meta: { min: 12 },
    });
    const reset = await svc.anonymous(RESET, { t: token, p: NEW_PASSWORD });
    expect(reset.body.data?.resetPassword).toEqual({ me: { id: user.id } });
  });

  test('resetting spends every other reset link the account holds', async () => {
    const user = await createUser(db, svc.workspace, { email: email() });
    await request(user.email);
    const first = await resetMailTo(user.email);
    await age(user, 120_000);
    await request(user.email);
    const second = await resetMailTo(user.email);
    await svc.anonymous(RESET, { t: second.token, p: NEW_PASSWORD });
    expectRefusal(
      (await svc.anonymous(RESET, { t: first.token, p: NEW_PASSWORD })).body,
      linkInvalid,
    );
  });

  test('an expired link is refused and the password stays', async () => {
    const user = await createUser(db, svc.workspace, { email: email() });
    await request(user.email);
    const { token } = await resetMailTo(user.email);
    await db
      .update(passwordResets)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(
        and(eq(passwordResets.workspaceId, user.workspaceId), eq(passwordResets.userId, user.id)),
      );
    expectRefusal((await svc.anonymous(RESET, { t: token, p: NEW_PASSWORD })).body, linkInvalid);
    const login = await svc.anonymous(LOGIN, { e: user.email, p: PASSWORD }, client());
    expect(login.body.data?.login).toEqual({ me: { id: user.id } });
  });

  test('the link of an account disabled meanwhile is refused', async () => {
    const user = await createUser(db, svc.workspace, { email: email() });
    await request(user.email);
    const { token } = await resetMailTo(user.email);
    await svc.graph(
      'mutation ($id: UUID!) { setUserDisabled(userId: $id, disabled: true) { id } }',
      {
        id: user.id,
      },
    );
    expectRefusal((await svc.anonymous(RESET, { t: token, p: NEW_PASSWORD })).body, linkInvalid);
  });

  test('unknown addresses, disabled accounts and invitees get the same answer and no link', async () => {
    const disabled = await createUser(db, svc.workspace, { email: email(), disabled: true });
    const pending = await createUser(db, svc.workspace, { email: email(), password: null });
    const received = smtp.received;
    await request(email());
    await request(disabled.email);
    await request(pending.email);
    expect(await resetLinksOf(db, disabled)).toEqual([]);
    expect(await resetLinksOf(db, pending)).toEqual([]);
    // The next mail to arrive is the one asked for now: nothing else was on its way.
    const active = await createUser(db, svc.workspace, { email: email() });
    await request(active.email);
    await resetMailTo(active.email);
    expect(smtp.received).toBe(received + 1);
  });

  test('a request inside SVC_RESET_COOLDOWN of the last reset mail sends nothing', async () => {
    const user = await createUser(db, svc.workspace, { email: email() });
    await request(user.email);
    await resetMailTo(user.email);
    await request(user.email);
    expect(await resetLinksOf(db, user)).toHaveLength(1);
    await age(user, 50_000);
    await request(user.email);
    expect(await resetLinksOf(db, user)).toHaveLength(1);
    await age(user, 20_000);
    await request(user.email);
    await resetMailTo(user.email);
    expect(await resetLinksOf(db, user)).toHaveLength(2);
  });

  test('the cooldown holds for the address across workspaces', async () => {
    const address = email();
    const older = await createUser(db, svc.workspace, { email: address });
    const elsewhere = await createWorkspace(db);
    const newer = await createUser(db, elsewhere, { email: address.toUpperCase() });
    await request(address);
    const { token } = await resetMailTo(address);
    await request(address, elsewhere.id);
    expect(await resetLinksOf(db, newer)).toEqual([]);
    await age(older, 120_000);
    await request(address, elsewhere.id);
    const second = await resetMailTo(newer.email);
    // Without a workspace the oldest workspace's account is meant; with one, that one.
    const first = await svc.anonymous(RESET, { t: token, p: NEW_PASSWORD });
    expect(first.body.data?.resetPassword).toEqual({ me: { id: older.id } });
    const other = await svc.anonymous(RESET, { t: second.token, p: NEW_PASSWORD });
    expect(other.body.data?.resetPassword).toEqual({ me: { id: newer.id } });
  });

  test('an account holds at most SVC_RESET_LINKS live links; one expiring frees a place', async () => {
    const user = await createUser(db, svc.workspace, { email: email() });
    for (let i = 0; i < 3; i += 1) {
      await request(user.email);
      await resetMailTo(user.email);
      await age(user, 120_000);
    }
    await request(user.email);
    expect(await liveLinks(user)).toBe(3);
    expect(await resetLinksOf(db, user)).toHaveLength(3);

    const [oldest] = (await resetLinksOf(db, user)).sort(
      (a, b) => a.createdAt.getTime() - b.createdAt.getTime(),
    );
    await db
      .update(passwordResets)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(
        and(eq(passwordResets.workspaceId, user.workspaceId), eq(passwordResets.id, oldest!.id)),
      );
    await request(user.email);
    await resetMailTo(user.email);
    expect(await liveLinks(user)).toBe(3);
  });

  test('over SVC_RESET_ATTEMPTS requests from one client address answer RATE_LIMITED', async () => {
    const from = client();
    for (let i = 0; i < 3; i += 1) {
      const { body } = await svc.anonymous(REQUEST_RESET, { e: email() }, from);
      expect(body).toEqual({ data: { requestPasswordReset: true } });
    }
    const { body } = await svc.anonymous(REQUEST_RESET, { e: email() }, from);
    expect(body.data).toBeNull();
    const error = body.errors?.[0];
    expect(error?.extensions).toMatchObject({ code: 'RATE_LIMITED', reason: 'rate_limited' });
    const retryAfter = error?.extensions.retryAfter as number;
    expect(retryAfter).toBeGreaterThan(1700);
    expect(retryAfter).toBeLessThanOrEqual(1800);
    expect(error?.extensions.meta).toEqual({ retryAfter });
    expect(error?.message).toBe(`too many attempts; try again in ${retryAfter} seconds`);
    // Another client address keeps its own budget.
    await request(email());
  });

  test('a malformed address is refused without spending an attempt', async () => {
    const from = client();
    const { body } = await svc.anonymous(REQUEST_RESET, { e: 'not an address' }, from);
    expectRefusal(body, {
      code: 'VALIDATION',
      reason: 'email_invalid',
      message: 'email address does not parse',
    });
    for (let i = 0; i < 3; i += 1) {
      const ok = await svc.anonymous(REQUEST_RESET, { e: email() }, from);
      expect(ok.body).toEqual({ data: { requestPasswordReset: true } });
    }
  });
});

describe('without SMTP', () => {
  const service = useTestService();

  test('a reset request answers true, sends nothing and creates no link', async () => {
    const svc = service();
    const db = svc.db.database.db;
    const user = await createUser(db, svc.workspace, { email: email() });
    const { body } = await svc.anonymous(REQUEST_RESET, { e: user.email });
    expect(body).toEqual({ data: { requestPasswordReset: true } });
    expect(await resetLinksOf(db, user)).toEqual([]);
  });

  test('resetPassword refuses a token that names no link', async () => {
    const { body } = await service().anonymous(RESET, { t: 'r1_nonsense', p: NEW_PASSWORD });
    expectRefusal(body, linkInvalid);
  });
});
