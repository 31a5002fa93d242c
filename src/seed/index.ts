import { count } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { createAccount } from '../users/service.js';
import type { User } from '../users/tables.js';
import { createWorkspace } from '../workspaces/service.js';
import { workspaces, type Workspace } from '../workspaces/tables.js';

/**
 * Demo data for a first look (`svc seed -yes`): a workspace, an admin and a member, then
 * every step of `seedSteps` in order, all in one transaction. Later areas (contacts,
 * tasks, plugins' records) add a step; each answers what it added, for the summary.
 */
export interface SeedContext {
  /** The seed's transaction. */
  db: Db;
  workspace: Workspace;
  admin: User;
  member: User;
}

export interface SeedStep {
  /** What the step adds, e.g. `contacts`. */
  name: string;
  /** Adds its rows and answers how many of each it added, e.g. `{ contacts: 12 }`. */
  run(context: SeedContext): Promise<Record<string, number>>;
}

/** The steps after the accounts, in order. */
export const seedSteps: SeedStep[] = [];

export const DEMO_WORKSPACE = 'Demo workspace';

export interface SeedAccount {
  user: User;
  /** Generated; shown once by the command, never stored in clear. */
  password: string;
}

export interface SeedResult {
  workspace: Workspace;
  admin: SeedAccount;
  member: SeedAccount;
  /** Each step's counts, by step name. */
  added: Record<string, Record<string, number>>;
}

/** Refused: the database already holds data, which the seed never touches. */
export class DatabaseNotEmpty extends Error {
  override name = 'DatabaseNotEmpty';
  constructor(readonly workspaceCount: number) {
    super(
      `the database already holds ${workspaceCount} workspace${workspaceCount === 1 ? '' : 's'}`,
    );
  }
}

export interface SeedOptions {
  /** Passwords for the demo accounts (the command generates them). */
  passwords: { admin: string; member: string };
  steps?: readonly SeedStep[];
}

/**
 * Fills an empty database. Call it in a transaction (and under a lock two seeds share):
 * the emptiness check and the rows must not interleave with another writer.
 */
export async function seedDemo(db: Db, options: SeedOptions): Promise<SeedResult> {
  const [row] = await db.select({ n: count() }).from(workspaces);
  if ((row?.n ?? 0) > 0) throw new DatabaseNotEmpty(row?.n ?? 0);
  const workspace = await createWorkspace(db, { name: DEMO_WORKSPACE });
  const admin = await createAccount(db, workspace.id, {
    email: 'admin@example.com',
    name: 'Ada Admin',
    password: options.passwords.admin,
    role: 'admin',
  });
  const member = await createAccount(db, workspace.id, {
    email: 'member@example.com',
    name: 'Max Member',
    password: options.passwords.member,
    role: 'member',
  });
  const added: Record<string, Record<string, number>> = {};
  for (const step of options.steps ?? seedSteps) {
    added[step.name] = await step.run({ db, workspace, admin, member });
  }
  return {
    workspace,
    admin: { user: admin, password: options.passwords.admin },
    member: { user: member, password: options.passwords.member },
    added,
  };
}
