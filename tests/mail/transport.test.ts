import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLogger, silentLogger } from '../../src/log.js';
import { createMailer, recipientDomain, smtpOptions } from '../../src/mail/transport.js';
import {
  captureLines,
  createTestCert,
  mailConfig,
  startTestSmtp,
  type TestSmtp,
} from './test-smtp.js';

const message = {
  to: 'ada@example.org',
  subject: 'Reset your password',
  text: 'Open https://crm.example.test/reset-password#token=s3cret-token\n',
};

// Made once, synchronously, for the whole file: nothing to wait for in a hook.
const cert = createTestCert();
let startTls: TestSmtp;
let plainOnly: TestSmtp;
let hidden: TestSmtp;
let withAuth: TestSmtp;
const credentials = { username: 'relay-user', password: 'p4ss-w0rd-never-logged' };

beforeAll(async () => {
  [startTls, plainOnly, hidden, withAuth] = await Promise.all([
    startTestSmtp({ cert }),
    startTestSmtp({ cert, startTls: 'unsupported' }),
    startTestSmtp({ cert, startTls: 'hidden' }),
    startTestSmtp({ cert, credentials }),
  ]);
});

afterAll(async () => {
  await Promise.all([startTls, plainOnly, hidden, withAuth].map((server) => server.close()));
});

const trustTestCa = () => ({ tls: { ca: cert.cert } });

describe('createMailer', () => {
  test('delivers a message with the configured sender, the recipient, subject and body', async () => {
    const mailer = createMailer(mailConfig(startTls.port), silentLogger(), trustTestCa());
    await mailer.send(message);
    const mail = await startTls.nextMail();
    expect(mail.mailFrom).toBe('crm@example.test');
    expect(mail.rcptTo).toEqual(['ada@example.org']);
    expect(mail.headers.get('from')).toBe('crm@example.test');
    expect(mail.headers.get('to')).toBe('ada@example.org');
    expect(mail.headers.get('subject')).toBe('Reset your password');
    expect(mail.text).toBe(message.text);
    mailer.close();
  });

  test('mandatory TLS upgrades with STARTTLS before sending', async () => {
    const mailer = createMailer(mailConfig(startTls.port), silentLogger(), trustTestCa());
    await mailer.send(message);
    expect((await startTls.nextMail()).secure).toBe(true);
  });

  test('mandatory TLS refuses to send to a server that does not offer STARTTLS', async () => {
    const mailer = createMailer(mailConfig(plainOnly.port), silentLogger(), trustTestCa());
    const before = plainOnly.received;
    await expect(mailer.send(message)).rejects.toThrow(/STARTTLS/);
    expect(plainOnly.received).toBe(before);
  });

  test('mandatory TLS still upgrades when the server accepts STARTTLS without offering it', async () => {
    // nodemailer's requireTLS issues STARTTLS whether or not EHLO lists it.
    const mailer = createMailer(mailConfig(hidden.port), silentLogger(), trustTestCa());
    await mailer.send(message);
    expect((await hidden.nextMail()).secure).toBe(true);
  });

  test('opportunistic TLS sends in plain text when the server does not offer STARTTLS', async () => {
    const config = mailConfig(hidden.port, { tls: 'opportunistic' });
    await createMailer(config, silentLogger(), trustTestCa()).send(message);
    expect((await hidden.nextMail()).secure).toBe(false);
  });

  test('mandatory TLS refuses a certificate the system does not trust', async () => {
    const mailer = createMailer(mailConfig(startTls.port), silentLogger());
    const before = startTls.received;
    await expect(mailer.send(message)).rejects.toThrow(/mail to example\.org not sent/);
    expect(startTls.received).toBe(before);
  });

  test('opportunistic TLS upgrades when the server offers STARTTLS', async () => {
    const config = mailConfig(startTls.port, { tls: 'opportunistic' });
    await createMailer(config, silentLogger(), trustTestCa()).send(message);
    expect((await startTls.nextMail()).secure).toBe(true);
  });

  test('opportunistic TLS sends in plain text to a server that does not support STARTTLS', async () => {
    const config = mailConfig(plainOnly.port, { tls: 'opportunistic' });
    await createMailer(config, silentLogger(), trustTestCa()).send(message);
    const mail = await plainOnly.nextMail();
    expect(mail.secure).toBe(false);
    expect(mail.text).toBe(message.text);
  });

  test('opportunistic TLS does not fall back to plain text when the certificate fails', async () => {
    const config = mailConfig(startTls.port, { tls: 'opportunistic' });
    const before = startTls.received;
    await expect(createMailer(config, silentLogger()).send(message)).rejects.toThrow();
    expect(startTls.received).toBe(before);
  });

  test('no TLS never upgrades, even when the server offers STARTTLS', async () => {
    const config = mailConfig(startTls.port, { tls: 'none' });
    await createMailer(config, silentLogger()).send(message);
    expect((await startTls.nextMail()).secure).toBe(false);
  });

  test('passes the username and password to the server with SMTP AUTH', async () => {
    const config = mailConfig(withAuth.port, credentials);
    await createMailer(config, silentLogger(), trustTestCa()).send(message);
    const mail = await withAuth.nextMail();
    expect(withAuth.logins.at(-1)).toEqual(credentials);
    expect(mail.user).toBe('relay-user');
    expect(mail.secure).toBe(true);
  });

  test('rejects when the server refuses the credentials', async () => {
    const config = mailConfig(withAuth.port, { ...credentials, password: 'wrong-password' });
    const mailer = createMailer(config, silentLogger(), trustTestCa());
    await expect(mailer.send(message)).rejects.toThrow(/Invalid login/);
  });

  test('logs the recipient domain and subject but never the password, address or body', async () => {
    const capture = captureLines();
    const log = createLogger({ level: 'debug', destination: capture.destination });
    const good = mailConfig(withAuth.port, credentials);
    await createMailer(good, log, trustTestCa()).send(message);
    await withAuth.nextMail();
    const bad = mailConfig(withAuth.port, { ...credentials, password: 'p4ss-w0rd-wrong-too' });
    await expect(createMailer(bad, log, trustTestCa()).send(message)).rejects.toThrow();
    const logged = capture.lines.join('');
    expect(capture.lines).toHaveLength(2);
    expect(logged).toContain('"recipientDomain":"example.org"');
    expect(logged).toContain('"subject":"Reset your password"');
    for (const secret of ['p4ss-w0rd', Buffer.from('p4ss-w0rd').toString('base64'), 'ada@']) {
      expect(logged).not.toContain(secret);
    }
    expect(logged).not.toContain('s3cret-token');
  });
});

describe('smtpOptions', () => {
  test('speaks implicit TLS on port 465 whatever the STARTTLS mode', () => {
    for (const tls of ['mandatory', 'opportunistic', 'none'] as const) {
      const options = smtpOptions(mailConfig(465, { tls }));
      expect(options).toMatchObject({ secure: true, requireTLS: false, ignoreTLS: false });
    }
  });

  test('maps each STARTTLS mode on other ports', () => {
    expect(smtpOptions(mailConfig(587, { tls: 'mandatory' }))).toMatchObject({
      secure: false,
      requireTLS: true,
      ignoreTLS: false,
    });
    expect(smtpOptions(mailConfig(587, { tls: 'opportunistic' }))).toMatchObject({
      secure: false,
      requireTLS: false,
      ignoreTLS: false,
    });
    expect(smtpOptions(mailConfig(25, { tls: 'none' }))).toMatchObject({
      secure: false,
      requireTLS: false,
      ignoreTLS: true,
    });
  });

  test('verifies certificates and bounds every wait', () => {
    const options = smtpOptions(mailConfig(587));
    expect(options.tls).toMatchObject({ rejectUnauthorized: true });
    expect(options.tls).not.toHaveProperty('ca');
    expect(options).toMatchObject({
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
  });

  test('sends no credentials when none are configured', () => {
    expect(smtpOptions(mailConfig(587)).auth).toBeUndefined();
  });
});

describe('recipientDomain', () => {
  test('keeps only the lower-cased part after the last @', () => {
    expect(recipientDomain('"a@b"@Example.ORG')).toBe('example.org');
  });
});
