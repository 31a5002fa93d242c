// Mail templates. A template is plain text: its first line is `Subject: ...`, the second is
// blank, the rest is the body. Placeholders are `{{name}}` (spaces inside the braces
// allowed); the only ones a template may use are listed per kind below, and a template
// naming any other is refused when it is loaded, so an operator's typo stops startup
// instead of reaching a recipient. Substitution is one pass of string replacement: a value
// containing `{{...}}` stays literal, nothing is evaluated, nothing is HTML.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Template {
  subject: string;
  body: string;
  /** `built-in` or the file it was read from, for error messages. */
  source: string;
}

export interface MailTemplates {
  invite: Template;
  reset: Template;
}

export interface RenderedMail {
  subject: string;
  text: string;
}

export interface InviteVars {
  /** The activation link, from `mailLink`. */
  link: string;
  /** The invitee's address. */
  email: string;
  /** The invitee's name; `{{name}}` falls back to the address when it is absent. */
  name?: string | null;
  /** The link's life (SVC_INVITE_TTL); `{{expiresIn}}` reads like `7 days`. */
  expiresInMs: number;
  workspace: string;
  /** Name of the account that sent the invitation. */
  inviter: string;
}

export interface ResetVars {
  link: string;
  email: string;
  name?: string | null;
  /** The link's life (SVC_RESET_TTL); `{{expiresIn}}` reads like `1 hour`. */
  expiresInMs: number;
}

type TemplateKind = keyof MailTemplates;

const PLACEHOLDERS: Record<TemplateKind, readonly string[]> = {
  invite: ['link', 'name', 'email', 'expiresIn', 'workspace', 'inviter'],
  reset: ['link', 'name', 'email', 'expiresIn'],
};

const FILES: Record<TemplateKind, string> = { invite: 'invite.tmpl', reset: 'reset.tmpl' };

const BUILT_IN: Record<TemplateKind, string> = {
  invite: `Subject: {{inviter}} invited you to {{workspace}}

Hello {{name}},

{{inviter}} invited you ({{email}}) to join the workspace "{{workspace}}".
To accept, open this link and choose a password:

{{link}}

The link expires in {{expiresIn}}. If you did not expect this invitation,
you can ignore this message.
`,
  reset: `Subject: Reset your password

Hello {{name}},

Someone asked to reset the password of the account {{email}}.
To choose a new password, open this link:

{{link}}

The link expires in {{expiresIn}}. If you did not ask for this, ignore this
message: your password stays as it is.
`,
};

const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9]*)\s*\}\}/g;
const SUBJECT_LINE = /^Subject:[ \t]*(.*)$/i;

/**
 * The templates to send with: each file of `templateDir` (`invite.tmpl`, `reset.tmpl`)
 * replaces its built-in template; a missing file keeps the built-in one. Reads the files
 * once. Throws an Error naming the file when a present file cannot be read, is not laid
 * out as `Subject:` line, blank line, body, or uses a placeholder its kind does not know.
 */
export function loadTemplates(templateDir: string | null): MailTemplates {
  return {
    invite: loadTemplate('invite', templateDir),
    reset: loadTemplate('reset', templateDir),
  };
}

function loadTemplate(kind: TemplateKind, templateDir: string | null): Template {
  if (templateDir === null) return parseTemplate(kind, BUILT_IN[kind], 'built-in');
  const path = join(templateDir, FILES[kind]);
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return parseTemplate(kind, BUILT_IN[kind], 'built-in');
    }
    throw new Error(`cannot read mail template ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return parseTemplate(kind, content, path);
}

/** Splits `Subject: ...`, a blank line and the body, and checks the placeholders. */
export function parseTemplate(kind: TemplateKind, content: string, source: string): Template {
  const lines = content.replace(/^\uFEFF/, '').split(/\r?\n/);
  const subject = SUBJECT_LINE.exec(lines[0] ?? '')?.[1]?.trim();
  if (subject === undefined || subject === '' || (lines[1] ?? '').trim() !== '') {
    throw new Error(
      `mail template ${source} must start with a "Subject: ..." line followed by a blank line`,
    );
  }
  const template = { subject, body: lines.slice(2).join('\n'), source };
  checkPlaceholders(kind, template);
  return template;
}

function checkPlaceholders(kind: TemplateKind, template: Template): void {
  const allowed = PLACEHOLDERS[kind];
  for (const [, name] of `${template.subject}\n${template.body}`.matchAll(PLACEHOLDER)) {
    if (name !== undefined && !allowed.includes(name)) {
      throw new Error(
        `mail template ${template.source} uses unknown placeholder {{${name}}}; known: ${allowed.map((n) => `{{${n}}}`).join(', ')}`,
      );
    }
  }
  // The subject is logged (ours and the relays' logs) and shown in inbox lists.
  if ([...template.subject.matchAll(PLACEHOLDER)].some(([, name]) => name === 'link')) {
    throw new Error(
      `mail template ${template.source} puts {{link}} in the subject; move it to the body`,
    );
  }
}

/** Replaces each known placeholder in one pass; values never get expanded again. */
function fill(text: string, values: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (match, name: string) => values[name] ?? match);
}

/**
 * Control characters (line breaks included) in a value become one space, so a workspace
 * or account name can neither break the subject header nor lay out lines of the body.
 */
function clean(value: string): string {
  return value.replace(/[\u0000-\u001f\u007f]+/g, ' ');
}

function render(template: Template, values: Record<string, string>): RenderedMail {
  const cleaned = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, clean(v)]));
  return { subject: fill(template.subject, cleaned).trim(), text: fill(template.body, cleaned) };
}

/** The values both mails fill in: each carries a link for one account, for a while. */
function linkValues(vars: ResetVars): Record<string, string> {
  return {
    link: vars.link,
    email: vars.email,
    name: vars.name || vars.email,
    expiresIn: humanDuration(vars.expiresInMs),
  };
}

export function renderInvite(templates: MailTemplates, vars: InviteVars): RenderedMail {
  return render(templates.invite, {
    ...linkValues(vars),
    workspace: vars.workspace,
    inviter: vars.inviter,
  });
}

export function renderReset(templates: MailTemplates, vars: ResetVars): RenderedMail {
  return render(templates.reset, linkValues(vars));
}

const UNITS: ReadonlyArray<readonly [number, string]> = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
];

/**
 * A duration in the largest unit that divides it exactly: 168h is `7 days`, 90m is
 * `90 minutes`, 1h is `1 hour`. Other values are whole seconds rounded down (at least one),
 * so a link never reads as living longer than it does.
 */
export function humanDuration(ms: number): string {
  const exact = UNITS.find(([size]) => ms >= size && ms % size === 0);
  const [size, unit] = exact ?? [1_000, 'second'];
  const count = Math.max(1, Math.floor(ms / size));
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}
