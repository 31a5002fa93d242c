import type { MailConfig } from '../config.js';
import type { Logger } from '../log.js';
import {
  loadTemplates,
  renderInvite,
  renderReset,
  type InviteVars,
  type ResetVars,
} from './templates.js';
import { createMailer, type MailerOptions } from './transport.js';

/** What the caller knows about an invitation; the address is the recipient's. */
export type InviteMail = Omit<InviteVars, 'email'>;
export type ResetMail = Omit<ResetVars, 'email'>;

export interface MailService {
  /** Sends the invitation to `to`; rejects when the relay does not take it. */
  sendInvite(to: string, vars: InviteMail): Promise<void>;
  /** Sends the password reset to `to`; rejects when the relay does not take it. */
  sendReset(to: string, vars: ResetMail): Promise<void>;
  close(): void;
}

/** The pages that read a mailed token; the frontend serves both. */
export type MailLinkPath = '/invitation' | '/reset-password';

/**
 * The link a mail carries: `{publicUrl}{path}#token={token}`. The token sits in the
 * fragment, which browsers never send to a server: it stays out of access logs (ours and
 * any proxy's) and out of Referer headers; the page reads it from `location.hash`.
 */
export function mailLink(publicUrl: string, path: MailLinkPath, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}${path}#token=${encodeURIComponent(token)}`;
}

/**
 * The mail service, or null without SMTP (SPEC 8.2: no mail is sent; an invitation shows
 * its link on screen, a reset request sends nothing). Reads the template overrides now,
 * so an unreadable or malformed template throws at startup, naming the file.
 * `options` is for tests only (a CA to trust).
 */
export function createMailService(
  config: MailConfig | null,
  log: Logger,
  options: MailerOptions = {},
): MailService | null {
  if (config === null) return null;
  const templates = loadTemplates(config.templateDir);
  const mailer = createMailer(config, log.child({ module: 'mail' }), options);
  return {
    sendInvite: (to, vars) =>
      mailer.send({ to, ...renderInvite(templates, { ...vars, email: to }) }),
    sendReset: (to, vars) => mailer.send({ to, ...renderReset(templates, { ...vars, email: to }) }),
    close: () => mailer.close(),
  };
}
