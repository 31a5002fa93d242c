import { createTransport, type SMTPTransportOptions } from 'nodemailer';
import type { MailConfig } from '../config.js';
import type { Logger } from '../log.js';

/** One plain-text message to one recipient; the sender is always `config.from`. */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /**
   * Delivers one message over a fresh SMTP connection. Resolves once the relay accepted it;
   * rejects when the connection, TLS, authentication or the relay fails. Logs the outcome
   * (recipient domain and subject only), so callers need not log it again.
   */
  send(message: OutgoingMail): Promise<void>;
  /** Releases the transport; nothing is pooled, so nothing stays open between sends. */
  close(): void;
}

/** Test-only knobs; production passes none and trusts the system's certificate store. */
export interface MailerOptions {
  tls?: {
    /** Extra trusted certificate authorities (PEM), e.g. a test server's self-signed cert. */
    ca?: string | Buffer;
  };
}

/** Port 465 is SMTP over implicit TLS ("submissions", RFC 8314). */
const IMPLICIT_TLS_PORT = 465;

/**
 * The nodemailer options for `config`. Certificate verification is always on: a relay
 * whose certificate does not verify fails the send in every mode (opportunistic included),
 * rather than falling back to plain text, which an active attacker could provoke.
 */
export function smtpOptions(config: MailConfig, options: MailerOptions = {}): SMTPTransportOptions {
  // SVC_SMTP_TLS names the STARTTLS mode. On port 465 TLS starts before the greeting
  // (nothing to negotiate), so we speak implicit TLS there whatever the mode says: a relay
  // on 465 does not answer plain SMTP, and the mode cannot weaken it.
  const implicitTls = config.port === IMPLICIT_TLS_PORT;
  return {
    host: config.host,
    port: config.port,
    secure: implicitTls,
    requireTLS: !implicitTls && config.tls === 'mandatory',
    ignoreTLS: !implicitTls && config.tls === 'none',
    // A failed STARTTLS handshake fails the send: no silent downgrade to plain text.
    opportunisticTLS: false,
    auth:
      config.username !== null && config.password !== null
        ? { user: config.username, pass: config.password }
        : undefined,
    tls: {
      minVersion: 'TLSv1.2',
      rejectUnauthorized: true,
      ...(options.tls?.ca === undefined ? {} : { ca: options.tls.ca }),
    },
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
    dnsTimeout: 10_000,
    // nodemailer's own logging would print the SMTP dialogue, bodies and links included.
    logger: false,
    debug: false,
    // We send plain text only; never let a message read local files or fetch URLs.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/** The part of an address after its last `@`, lower-cased: all we log of a recipient. */
export function recipientDomain(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

interface SmtpFailure {
  message?: string;
  code?: string;
  responseCode?: number;
  command?: string;
}

/** An SMTP transport for `config`; see `smtpOptions` for the TLS rules. */
export function createMailer(config: MailConfig, log: Logger, options: MailerOptions = {}): Mailer {
  const transport = createTransport(smtpOptions(config, options));
  return {
    async send(message) {
      const fields = { recipientDomain: recipientDomain(message.to), subject: message.subject };
      try {
        const info = await transport.sendMail({ from: config.from, ...message });
        log.info({ mail: { ...fields, messageId: info.messageId } }, 'mail sent');
      } catch (error) {
        // Only the failure's own fields: nodemailer's errors name the command and the
        // relay's answer, never the credentials or the message.
        const { message: reason, code, responseCode, command } = error as SmtpFailure;
        log.warn(
          { mail: fields, failure: { reason, code, responseCode, command } },
          'mail not sent',
        );
        const summary = `mail to ${fields.recipientDomain} not sent: ${reason ?? 'unknown error'}`;
        throw new Error(summary, { cause: error });
      }
    },
    close() {
      transport.close();
    },
  };
}
