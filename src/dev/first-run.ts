import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { verifyPassword } from '../auth/passwords.js';
import type { Db } from '../db/client.js';
import { createAccount, findUserByEmail } from '../users/service.js';
import { createWorkspace, findFirstWorkspace } from '../workspaces/service.js';
import type { Workspace } from '../workspaces/tables.js';

export interface FirstAdmin {
  /** Null when this data folder keeps no sign-in for the database. */
  email: string | null;
  password: string | null;
  created: boolean;
}

/**
 * A first admin this folder made, with the database it was made in: the ids of its
 * workspace and account (random UUIDs, so no other database holds them unless it is a
 * copy, where the password works too). Files written before the ids were kept hold
 * entries without them.
 */
interface SavedAdmin {
  email: string;
  password: string;
  workspaceId?: string;
  accountId?: string;
}

const EMAIL = 'admin@example.com';
const FILE = 'first-admin.json';

function readSaved(file: string): SavedAdmin[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const parsed = JSON.parse(text) as { admins?: SavedAdmin[] } & Partial<SavedAdmin>;
  if (Array.isArray(parsed.admins)) return parsed.admins;
  return parsed.email && parsed.password
    ? [{ email: parsed.email, password: parsed.password }]
    : [];
}

function writeSaved(dataDir: string, admins: SavedAdmin[]): void {
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(path.join(dataDir, FILE), JSON.stringify({ admins }, null, 2), { mode: 0o600 });
}

/**
 * The saved admin made in this database, if any. An entry without ids counts only when
 * its password still signs its account in; it then gains the ids.
 */
async function savedFor(
  db: Db,
  dataDir: string,
  workspace: Workspace,
  saved: SavedAdmin[],
): Promise<SavedAdmin | undefined> {
  for (const entry of saved) {
    if (entry.workspaceId !== undefined && entry.workspaceId !== workspace.id) continue;
    const account = await findUserByEmail(db, workspace.id, entry.email);
    if (!account) continue;
    if (entry.accountId !== undefined) {
      if (entry.accountId === account.id) return entry;
      continue;
    }
    if (account.passwordHash && (await verifyPassword(account.passwordHash, entry.password))) {
      Object.assign(entry, { workspaceId: workspace.id, accountId: account.id });
      writeSaved(dataDir, saved);
      return entry;
    }
  }
  return undefined;
}

/**
 * On an empty database: a first workspace and an admin with a generated password, kept
 * (mode 0600) in the local data folder with the database it belongs to, so later starts
 * on that database, and only on it, print it again.
 */
export async function ensureFirstAdmin(db: Db, dataDir: string): Promise<FirstAdmin> {
  const saved = readSaved(path.join(dataDir, FILE));
  const first = await findFirstWorkspace(db);
  if (first) {
    const known = await savedFor(db, dataDir, first, saved);
    return { email: known?.email ?? null, password: known?.password ?? null, created: false };
  }
  const password = randomBytes(15).toString('base64url');
  const workspace = await createWorkspace(db, { name: 'My workspace' });
  const account = await createAccount(db, workspace.id, {
    email: EMAIL,
    name: 'Admin',
    password,
    role: 'admin',
  });
  writeSaved(dataDir, [
    ...saved,
    { email: EMAIL, password, workspaceId: workspace.id, accountId: account.id },
  ]);
  return { email: EMAIL, password, created: true };
}
