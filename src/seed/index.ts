import { count } from 'drizzle-orm';
import type { Context } from '../context.js';
import type { Db } from '../db/client.js';
import { createAccount } from '../users/service.js';
import type { User } from '../users/tables.js';
import { createWorkspace, workspacesWithName } from '../workspaces/service.js';
import { workspaces, type Workspace } from '../workspaces/tables.js';
import { contactsStep } from './contacts.js';
import { tasksStep } from './tasks.js';

/**
 * Demo data for a first look (`svc seed -yes`): a workspace, an admin and a member, then
 * every step of `seedSteps` in order, all in one transaction. Steps write through the
 * domain services, acting as one of the demo accounts, so every rule and event applies.
 */
export interface SeedContext {
  /** The seed's transaction. */
  db: Db;
  workspace: Workspace;
  admin: User;
  member: User;
  /** The service context acting as `user` (admin or member) on the seed's transaction. */
  as(user: User): Context;
  /** The day the demo's dates count from. */
  today: Date;
}

export interface SeedStep {
  /** What the step adds, e.g. `contacts`. */
  name: string;
  /** Adds its rows and answers how many of each it added, e.g. `{ contacts: 12 }`. */
  run(context: SeedContext): Promise<Record<string, number>>;
}

/** The steps after the accounts, in order: contacts, then tasks about them. */
export const seedSteps: SeedStep[] = [contactsStep, tasksStep];

export const DEMO_WORKSPACE = 'Demo workspace';

/**
 * The demo accounts' addresses, on a domain of their own: the seed may go beside `svc dev`'s
 * first admin (`admin@example.com`), and an address held in two workspaces would make every
 * command naming it need `-workspace`.
 */
export const DEMO_EMAILS = { admin: 'admin@demo.example.com', member: 'member@demo.example.com' };

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

/** Refused: the demo workspace is already there (the seed ran before). */
export class DemoAlreadySeeded extends Error {
  override name = 'DemoAlreadySeeded';
  constructor(readonly workspace: Workspace) {
    super(`the database already holds the demo workspace "${workspace.name}" (${workspace.id})`);
  }
}

export interface SeedOptions {
  /** Passwords for the demo accounts (the command generates them). */
  passwords: { admin: string; member: string };
  /** The service context acting as `user` on `db` (the seed's transaction). */
  contextFor(db: Db, user: User): Context;
  /**
   * Add the demo workspace beside the workspaces already there (a development database,
   * where `svc dev` made "My workspace"); otherwise the database must hold none.
   * @default false
   */
  besideOthers?: boolean;
  /** @default the current day */
  today?: Date;
  steps?: readonly SeedStep[];
}

/** Refuses a second seed, then (unless `besideOthers`) any database holding a workspace. */
async function checkSeedable(db: Db, besideOthers: boolean): Promise<void> {
  const [demo] = await workspacesWithName(db, DEMO_WORKSPACE);
  if (demo) throw new DemoAlreadySeeded(demo);
  if (besideOthers) return;
  const [row] = await db.select({ n: count() }).from(workspaces);
  if ((row?.n ?? 0) > 0) throw new DatabaseNotEmpty(row?.n ?? 0);
}

/**
 * Adds the demo workspace. Call it in a transaction (and under a lock two seeds share):
 * the checks and the rows must not interleave with another writer.
 */
export async function seedDemo(db: Db, options: SeedOptions): Promise<SeedResult> {
  await checkSeedable(db, options.besideOthers ?? false);
  const workspace = await createWorkspace(db, { name: DEMO_WORKSPACE });
  const admin = await createAccount(db, workspace.id, {
    email: DEMO_EMAILS.admin,
    name: 'Ada Admin',
    password: options.passwords.admin,
    role: 'admin',
  });
  const member = await createAccount(db, workspace.id, {
    email: DEMO_EMAILS.member,
    name: 'Max Member',
    password: options.passwords.member,
    role: 'member',
  });
  const context: SeedContext = {
    db,
    workspace,
    admin,
    member,
    as: (user) => options.contextFor(db, user),
    today: options.today ?? new Date(),
  };
  const added: Record<string, Record<string, number>> = {};
  for (const step of options.steps ?? seedSteps) added[step.name] = await step.run(context);
  return {
    workspace,
    admin: { user: admin, password: options.passwords.admin },
    member: { user: member, password: options.passwords.member },
    added,
  };
}
