import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/log.js';
import { createMailService, mailLink, type MailService } from '../../src/mail/index.js';
import { createTestCert, mailConfig, startTestSmtp, type TestSmtp } from './test-smtp.js';

// Made once, synchronously, for the whole file: nothing to wait for in a hook.
const cert = createTestCert();
let smtp: TestSmtp;
let dir: string;

beforeAll(async () => {
  smtp = await startTestSmtp({ cert });
  dir = mkdtempSync(join(tmpdir(), 'svc-mail-service-'));
});

afterAll(async () => {
  await smtp.close();
  rmSync(dir, { recursive: true, force: true });
});

function service(templateDir: string | null = null): MailService {
  const config = mailConfig(smtp.port, { templateDir });
  const mail = createMailService(config, silentLogger(), { tls: { ca: cert.cert } });
  if (mail === null) throw new Error('expected a mail service');
  return mail;
}

describe('mailLink', () => {
  test('puts the token in the fragment of the page under the public URL', () => {
    expect(mailLink('https://crm.example.test', '/invitation', 'abc')).toBe(
      'https://crm.example.test/invitation#token=abc',
    );
    expect(mailLink('http://localhost:8080', '/reset-password', 'abc')).toBe(
      'http://localhost:8080/reset-password#token=abc',
    );
  });

  test('percent-encodes the token and tolerates a trailing slash', () => {
    expect(mailLink('https://crm.example.test/', '/invitation', 'a+b/c=&d')).toBe(
      'https://crm.example.test/invitation#token=a%2Bb%2Fc%3D%26d',
    );
  });
});

describe('createMailService', () => {
  test('is null without SMTP configuration, so callers know no mail is sent', () => {
    expect(createMailService(null, silentLogger())).toBeNull();
  });

  test('sends an invitation to the invitee with its link', async () => {
    const link = mailLink('https://crm.example.test', '/invitation', 'invite-token-1');
    await service().sendInvite('ada@example.org', {
      link,
      name: 'Ada',
      expiresInMs: 168 * 3_600_000,
      workspace: 'Acme',
      inviter: 'Grace',
    });
    const mail = await smtp.nextMail();
    expect(mail.rcptTo).toEqual(['ada@example.org']);
    expect(mail.headers.get('subject')).toBe('Grace invited you to Acme');
    expect(mail.text).toContain(`\n${link}\n`);
    expect(mail.text).toContain('(ada@example.org)');
    expect(mail.text).toContain('expires in 7 days');
  });

  test('sends a password reset with its link', async () => {
    const link = mailLink('https://crm.example.test', '/reset-password', 'reset-token-1');
    await service().sendReset('ada@example.org', { link, expiresInMs: 3_600_000 });
    const mail = await smtp.nextMail();
    expect(mail.headers.get('subject')).toBe('Reset your password');
    expect(mail.text).toContain('Hello ada@example.org,');
    expect(mail.text).toContain(`\n${link}\n`);
    expect(mail.text).toContain('expires in 1 hour');
  });

  test('sends with the templates of the configured directory', async () => {
    writeFileSync(join(dir, 'reset.tmpl'), 'Subject: Your {{email}} reset\n\nGo: {{link}}\n');
    await service(dir).sendReset('ada@example.org', { link: 'L', expiresInMs: 60_000 });
    const mail = await smtp.nextMail();
    expect(mail.headers.get('subject')).toBe('Your ada@example.org reset');
    expect(mail.text).toBe('Go: L\n');
  });

  test('fails at creation when a template file is malformed', () => {
    const bad = mkdtempSync(join(dir, 'bad-'));
    writeFileSync(join(bad, 'invite.tmpl'), 'no subject here\n');
    expect(() => service(bad)).toThrow(join(bad, 'invite.tmpl'));
  });
});
