import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from '../db/client.js';
import { createAccount } from '../users/service.js';
import { createWorkspace, findFirstWorkspace } from '../workspaces/service.js';

export interface FirstAdmin {
  email: string;
  /** Null when the account existed before this data folder kept its password. */
  password: string | null;
  created: boolean;
}

const EMAIL = 'admin@example.com';

/**
 * On an empty database: a first workspace and an admin with a generated password, kept
 * (mode 0600) in the local data folder so later starts can print it again.
 */
export async function ensureFirstAdmin(db: Db, dataDir: string): Promise<FirstAdmin> {
  const file = path.join(dataDir, 'first-admin.json');
  if (await findFirstWorkspace(db)) {
    const saved = existsSync(file)
      ? (JSON.parse(readFileSync(file, 'utf8')) as { email: string; password: string })
      : null;
    return { email: saved?.email ?? EMAIL, password: saved?.password ?? null, created: false };
  }
  const password = randomBytes(15).toString('base64url');
  const workspace = await createWorkspace(db, { name: 'My workspace' });
  await createAccount(db, workspace.id, { email: EMAIL, name: 'Admin', password, role: 'admin' });
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify({ email: EMAIL, password }, null, 2), { mode: 0o600 });
  return { email: EMAIL, password, created: true };
}
