// A real SMTP server in the test process (the smtp-server package) on 127.0.0.1, a random
// port, and a self-signed certificate made with openssl for each test file.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerAuthentication } from 'smtp-server';
import type { MailConfig } from '../../src/config.js';

export interface TestCert {
  key: string;
  cert: string;
}

/** A throwaway certificate for `localhost` and 127.0.0.1, valid for one day. */
export function createTestCert(): TestCert {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mail-tls-'));
  try {
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync(
      'openssl',
      [
        'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost',
        '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ], // prettier-ignore
      { stdio: 'ignore' },
    );
    return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ReceivedMail {
  mailFrom: string;
  rcptTo: string[];
  /** Whether the session ran over TLS (STARTTLS done) when the message was sent. */
  secure: boolean;
  /** The authenticated user, if the client logged in. */
  user: string | undefined;
  headers: Map<string, string>;
  /** The decoded text body. */
  text: string;
}

export interface TestSmtp {
  port: number;
  /** Credentials the client offered, whether accepted or not. */
  logins: Array<{ username: string | undefined; password: string | null | undefined }>;
  /** How many messages arrived so far. */
  received: number;
  /** The next message to arrive (or the oldest not yet taken). */
  nextMail(): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export interface TestSmtpOptions {
  cert: TestCert;
  /**
   * `offered` (the default); `hidden`: left out of the EHLO answer but still accepted, as
   * smtp-server's hideSTARTTLS does; `unsupported`: neither offered nor accepted.
   */
  startTls?: 'offered' | 'hidden' | 'unsupported';
  /** Accepted credentials; others get 535. Without them AUTH is optional and not checked. */
  credentials?: { username: string; password: string };
}

export async function startTestSmtp(options: TestSmtpOptions): Promise<TestSmtp> {
  const queue: ReceivedMail[] = [];
  const waiting: Array<(mail: ReceivedMail) => void> = [];
  const logins: TestSmtp['logins'] = [];
  const deliver = (mail: ReceivedMail): void => {
    const waiter = waiting.shift();
    if (waiter === undefined) queue.push(mail);
    else waiter(mail);
  };
  let received = 0;
  const server = new SMTPServer({
    key: options.cert.key,
    cert: options.cert.cert,
    hideSTARTTLS: options.startTls === 'hidden',
    disabledCommands: options.startTls === 'unsupported' ? ['STARTTLS'] : [],
    authOptional: options.credentials === undefined,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth: SMTPServerAuthentication, _session, callback) {
      logins.push({ username: auth.username, password: auth.password });
      const expected = options.credentials;
      if (auth.username === expected?.username && auth.password === expected?.password) {
        callback(null, { user: auth.username });
      } else {
        callback(new Error('Invalid username or password'));
      }
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received += 1;
        const { mailFrom, rcptTo } = session.envelope;
        deliver({
          mailFrom: mailFrom === false ? '' : mailFrom.address,
          rcptTo: rcptTo.map((r) => r.address),
          secure: session.secure,
          user: typeof session.user === 'string' ? session.user : undefined,
          ...parseMessage(Buffer.concat(chunks).toString('utf8')),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    logins,
    get received() {
      return received;
    },
    nextMail() {
      const mail = queue.shift();
      if (mail !== undefined) return Promise.resolve(mail);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Just enough MIME for one text part: unfolded headers and a 7bit, QP or base64 body. */
function parseMessage(raw: string): { headers: Map<string, string>; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = new Map<string, string>();
  for (const line of raw
    .slice(0, split)
    .replace(/\r\n[ \t]+/g, ' ')
    .split('\r\n')) {
    const colon = line.indexOf(':');
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  const body = raw.slice(split + 4);
  const encoding = headers.get('content-transfer-encoding')?.toLowerCase();
  const bytes =
    encoding === 'base64'
      ? Buffer.from(body, 'base64')
      : encoding === 'quoted-printable'
        ? decodeQuotedPrintable(body)
        : Buffer.from(body, 'utf8');
  return { headers, text: bytes.toString('utf8').replace(/\r\n/g, '\n') };
}

function decodeQuotedPrintable(body: string): Buffer {
  const joined = body.replace(/=\r\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i += 1) {
    const hex = joined.slice(i + 1, i + 3);
    if (joined[i] === '=' && /^[0-9A-F]{2}$/i.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(joined[i] ?? '', 'utf8'));
    }
  }
  return Buffer.from(bytes);
}

/** A mail config pointing at the test server; override what a test is about. */
export function mailConfig(port: number, overrides: Partial<MailConfig> = {}): MailConfig {
  return {
    host: '127.0.0.1',
    port,
    username: null,
    password: null,
    from: 'crm@example.test',
    tls: 'mandatory',
    publicUrl: 'https://crm.example.test',
    templateDir: null,
    ...overrides,
  };
}

/** A logger writing into an array, to check what reached the logs. */
export function captureLines(): { lines: string[]; destination: { write(line: string): void } } {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) } };
}

/** The mail settings of a service sending to `smtp` in plain SMTP, links to crm.example.test. */
export function mailEnv(smtp: { port: number }): Record<string, string> {
  return {
    SVC_SMTP_HOST: '127.0.0.1',
    SVC_SMTP_PORT: String(smtp.port),
    SVC_SMTP_FROM: 'crm@example.test',
    SVC_SMTP_TLS: 'none',
    SVC_PUBLIC_URL: 'https://crm.example.test',
  };
}
