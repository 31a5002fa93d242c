import type { EnvReader, GroupReader } from './reader.js';
import {
  directory,
  email,
  port,
  publicUrl,
  smtpHost,
  smtpTls,
  text,
  type Schema,
} from './schemas.js';
import type { MailConfig, SmtpTls } from './types.js';

/** Refused without a host (SPEC 8.2); SVC_PUBLIC_URL and the template dir are just ignored. */
const NEED_HOST = [
  'SVC_SMTP_PORT',
  'SVC_SMTP_USERNAME',
  'SVC_SMTP_PASSWORD',
  'SVC_SMTP_FROM',
  'SVC_SMTP_TLS',
];

/**
 * The Mail group: null without SVC_SMTP_HOST (no mail is sent). Also null when the host,
 * the sender or the public URL is refused, since they have no default to fall back on;
 * other refused values fall back to their defaults.
 */
export function readMail(env: EnvReader): MailConfig | null {
  const r = env.group('mail');
  if (!env.isSet('SVC_SMTP_HOST')) {
    for (const name of NEED_HOST.filter((n) => env.isSet(n))) {
      r.refuse(name, 'is set but SVC_SMTP_HOST is not');
    }
    return null;
  }
  const host = r.optional('SVC_SMTP_HOST', smtpHost);
  const smtpPort = r.read('SVC_SMTP_PORT', port, '587');
  const { username, password } = readCredentials(r);
  const tls = readTls(r, username !== null);
  const from = readRequired(r, 'SVC_SMTP_FROM', email);
  const url = readRequired(r, 'SVC_PUBLIC_URL', publicUrl);
  const templateDir = r.optional('SVC_MAIL_TEMPLATE_DIR', directory);
  if (host === null || from === null || url === null) return null;
  return { host, port: smtpPort, username, password, from, tls, publicUrl: url, templateDir };
}

function readCredentials(r: GroupReader): { username: string | null; password: string | null } {
  const username = r.optional('SVC_SMTP_USERNAME', text);
  const password = r.optional('SVC_SMTP_PASSWORD', text);
  if ((username === null) === (password === null)) return { username, password };
  const [missing, given] =
    username === null
      ? ['SVC_SMTP_USERNAME', 'SVC_SMTP_PASSWORD']
      : ['SVC_SMTP_PASSWORD', 'SVC_SMTP_USERNAME'];
  r.refuse(missing, `must be set with ${given}: set both or neither`);
  return { username: null, password: null };
}

/** Credentials need TLS mode mandatory (SPEC 8.2): they must never cross in clear text. */
function readTls(r: GroupReader, hasCredentials: boolean): SmtpTls {
  const tls = r.read('SVC_SMTP_TLS', smtpTls, 'mandatory');
  if (tls === 'mandatory' || !hasCredentials) return tls;
  r.refuse(
    'SVC_SMTP_TLS',
    'must be mandatory when SVC_SMTP_USERNAME and SVC_SMTP_PASSWORD are set',
    tls,
  );
  return 'mandatory';
}

function readRequired<T>(r: GroupReader, name: string, schema: Schema<T>): T | null {
  if (!r.env.isSet(name)) r.refuse(name, 'is required when SVC_SMTP_HOST is set');
  return r.optional(name, schema);
}
