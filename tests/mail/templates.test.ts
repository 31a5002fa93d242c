import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  humanDuration,
  loadTemplates,
  parseTemplate,
  renderInvite,
  renderReset,
} from '../../src/mail/templates.js';

const invite = {
  link: 'https://crm.example.test/invitation#token=tok123',
  email: 'ada@example.org',
  name: 'Ada',
  expiresInMs: 168 * 3_600_000,
  workspace: 'Acme',
  inviter: 'Grace',
};
const reset = {
  link: 'https://crm.example.test/reset-password#token=tok456',
  email: 'ada@example.org',
  name: 'Ada',
  expiresInMs: 3_600_000,
};

let root: string;
let dirCount = 0;

/** A fresh template directory holding `files`. */
function templateDir(files: Record<string, string>): string {
  dirCount += 1;
  const dir = join(root, `dir-${dirCount}`);
  mkdirSync(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-mail-templates-'));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('built-in templates', () => {
  test('the invitation names the inviter, workspace, link and expiry', () => {
    const mail = renderInvite(loadTemplates(null), invite);
    expect(mail.subject).toBe('Grace invited you to Acme');
    expect(mail.text).toContain('Hello Ada,');
    expect(mail.text).toContain('Grace invited you (ada@example.org) to join the workspace "Acme"');
    expect(mail.text).toContain('\nhttps://crm.example.test/invitation#token=tok123\n');
    expect(mail.text).toContain('expires in 7 days');
    expect(mail.text).not.toMatch(/\{\{/);
  });

  test('the reset names the account, link and expiry', () => {
    const mail = renderReset(loadTemplates(null), reset);
    expect(mail.subject).toBe('Reset your password');
    expect(mail.text).toContain('the account ada@example.org');
    expect(mail.text).toContain('\nhttps://crm.example.test/reset-password#token=tok456\n');
    expect(mail.text).toContain('expires in 1 hour');
    expect(mail.text).not.toMatch(/\{\{/);
  });

  test('a missing name is replaced by the address', () => {
    const mail = renderInvite(loadTemplates(null), { ...invite, name: null });
    expect(mail.text).toContain('Hello ada@example.org,');
  });
});

describe('template files', () => {
  test('an invite.tmpl file replaces the built-in invitation and reset keeps its own', () => {
    const dir = templateDir({
      'invite.tmpl':
        'Subject: Join {{ workspace }}\n\n{{inviter}} -> {{name}}: {{link}} ({{expiresIn}})\n',
    });
    const templates = loadTemplates(dir);
    expect(renderInvite(templates, invite)).toEqual({
      subject: 'Join Acme',
      text: 'Grace -> Ada: https://crm.example.test/invitation#token=tok123 (7 days)\n',
    });
    expect(renderReset(templates, reset).subject).toBe('Reset your password');
  });

  test('a reset.tmpl file replaces the built-in reset and invite keeps its own', () => {
    const dir = templateDir({
      'reset.tmpl': 'Subject: New password\r\n\r\n{{email}} {{link}}\r\n',
    });
    const templates = loadTemplates(dir);
    expect(renderReset(templates, reset)).toEqual({
      subject: 'New password',
      text: 'ada@example.org https://crm.example.test/reset-password#token=tok456\n',
    });
    expect(renderInvite(templates, invite).subject).toBe('Grace invited you to Acme');
  });

  test('an empty directory keeps both built-in templates', () => {
    expect(loadTemplates(templateDir({}))).toEqual(loadTemplates(null));
  });

  test('a file that cannot be read stops loading with its path', () => {
    const dir = templateDir({});
    mkdirSync(join(dir, 'reset.tmpl'));
    expect(() => loadTemplates(dir)).toThrow(
      `cannot read mail template ${join(dir, 'reset.tmpl')}`,
    );
  });

  test('a file without a subject line stops loading with its path', () => {
    const dir = templateDir({ 'invite.tmpl': 'Hello {{name}}\n\n{{link}}\n' });
    expect(() => loadTemplates(dir)).toThrow(
      `mail template ${join(dir, 'invite.tmpl')} must start with a "Subject: ..." line`,
    );
  });

  test('a subject not followed by a blank line is refused', () => {
    expect(() => parseTemplate('reset', 'Subject: Hi\n{{link}}\n', 'reset.tmpl')).toThrow(
      /followed by a blank line/,
    );
  });

  test('a placeholder the kind does not know stops loading, naming it and the file', () => {
    const dir = templateDir({ 'reset.tmpl': 'Subject: Reset\n\n{{link}} for {{workspace}}\n' });
    expect(() => loadTemplates(dir)).toThrow(
      `mail template ${join(dir, 'reset.tmpl')} uses unknown placeholder {{workspace}}`,
    );
  });

  test('a link in the subject is refused, since subjects are logged', () => {
    expect(() => parseTemplate('invite', 'Subject: {{link}}\n\nbody\n', 'invite.tmpl')).toThrow(
      /puts \{\{link\}\} in the subject/,
    );
  });
});

describe('substitution', () => {
  test('values are inserted literally and never expanded again', () => {
    const mail = renderInvite(loadTemplates(null), { ...invite, name: '{{link}} $& $1' });
    expect(mail.text).toContain('Hello {{link}} $& $1,');
  });

  test('line breaks in a value cannot add header lines or body lines', () => {
    const mail = renderInvite(loadTemplates(null), {
      ...invite,
      inviter: 'Grace\r\nBcc: eve@example.org',
      workspace: 'Acme\n\nClick http://evil.example',
    });
    expect(mail.subject).toBe(
      'Grace Bcc: eve@example.org invited you to Acme Click http://evil.example',
    );
    expect(mail.text).not.toContain('\nClick http://evil.example');
  });

  test('text that only looks like a placeholder stays as written', () => {
    const template = parseTemplate('reset', 'Subject: Hi\n\n{{ not one }} {{}} {{link}}\n', 'x');
    expect(renderReset({ invite: template, reset: template }, reset).text).toBe(
      '{{ not one }} {{}} https://crm.example.test/reset-password#token=tok456\n',
    );
  });
});

describe('humanDuration', () => {
  test.each([
    [168 * 3_600_000, '7 days'],
    [86_400_000, '1 day'],
    [36 * 3_600_000, '36 hours'],
    [3_600_000, '1 hour'],
    [90 * 60_000, '90 minutes'],
    [60_000, '1 minute'],
    [90_000, '90 seconds'],
    [30_000, '30 seconds'],
    [1_500, '1 second'],
    [250, '1 second'],
  ])('writes %i ms as %j', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });
});
