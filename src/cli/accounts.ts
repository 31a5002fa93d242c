import { and, asc, eq, or, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { createAccount, findUserByEmail } from '../users/service.js';
import { users, type User } from '../users/tables.js';
import { createWorkspace } from '../workspaces/service.js';
import { workspaces, type Workspace } from '../workspaces/tables.js';
import { CommandError, UsageError } from './errors.js';

// Lookups the account commands share. The services have no cross-workspace lookups yet
// (the graph always knows its caller's workspace); an operator names an account by its
// address and, where that is ambiguous, its workspace (`-workspace <id or name>`).

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function describe(workspace: Workspace): string {
  return `"${workspace.name}" (${workspace.id})`;
}

/** Every workspace whose id or name (ignoring case and outer spaces) is `text`. */
async function workspacesNamed(db: Db, text: string): Promise<Workspace[]> {
  const wanted = text.trim();
  const byName = eq(sql`lower(${workspaces.name})`, wanted.toLowerCase());
  return db
    .select()
    .from(workspaces)
    .where(uuidPattern.test(wanted) ? or(eq(workspaces.id, wanted), byName) : byName)
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id));
}

/**
 * The workspace `-workspace` names: by id, else by name. An id wins over a workspace
 * that happens to be named like it; a name several workspaces share is refused, listing
 * their ids. Undefined when it names none.
 */
export async function findNamedWorkspace(db: Db, text: string): Promise<Workspace | undefined> {
  const found = await workspacesNamed(db, text);
  const byId = found.find((workspace) => workspace.id === text.trim().toLowerCase());
  if (byId) return byId;
  if (found.length > 1) {
    throw new CommandError(
      `-workspace: ${found.length} workspaces are named "${text.trim()}": ${found.map(describe).join(', ')}; give its id`,
    );
  }
  return found[0];
}

export async function requireNamedWorkspace(db: Db, text: string): Promise<Workspace> {
  const workspace = await findNamedWorkspace(db, text);
  if (!workspace) throw new CommandError(`-workspace: no workspace has the id or name "${text}"`);
  return workspace;
}

export async function listWorkspaces(db: Db, limit: number): Promise<Workspace[]> {
  return db
    .select()
    .from(workspaces)
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id))
    .limit(limit);
}

export interface Account {
  user: User;
  workspace: Workspace;
}

/** `-workspace` beside the `-email` that `requireAccount` reads, for the token commands. */
export const ownerWorkspaceArg = {
  type: 'string',
  description:
    "id or name of the owner's workspace, needed when the address has accounts in several",
} as const;

/**
 * The account `-email` (and `-workspace`, when given) names. An address held in several
 * workspaces without `-workspace` is a usage error naming `-workspace`.
 */
export async function requireAccount(
  db: Db,
  email: string,
  workspaceText: string | undefined,
): Promise<Account> {
  const workspace =
    workspaceText === undefined ? undefined : await requireNamedWorkspace(db, workspaceText);
  const rows = await db
    .select({ user: users, workspace: workspaces })
    .from(users)
    .innerJoin(workspaces, eq(workspaces.id, users.workspaceId))
    .where(
      and(
        eq(sql`lower(${users.email})`, email.trim().toLowerCase()),
        workspace ? eq(users.workspaceId, workspace.id) : undefined,
      ),
    )
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id))
    .limit(20);
  if (rows.length === 0) {
    throw new CommandError(
      workspace
        ? `-email: no account in workspace ${describe(workspace)} has the address ${email}`
        : `-email: no account has the address ${email}`,
    );
  }
  if (rows.length > 1) {
    throw new UsageError(
      `-email: ${email} has accounts in several workspaces (${rows
        .map((row) => describe(row.workspace))
        .join(', ')}); name one with -workspace <id or name>`,
    );
  }
  return rows[0] as Account;
}

export { describe as describeWorkspace };

/** The name of the workspace `account:create-admin` makes on an empty database. */
export const FIRST_WORKSPACE_NAME = 'My workspace';
const UNIQUE_VIOLATION = '23505';

/**
 * Runs `work` in one transaction. drizzle's transaction lacks the pool's `$client`, which
 * the services never touch, so it stands in for a `Db`.
 */
export function inTransaction<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  return db.transaction((tx) => work(tx as unknown as Db));
}

export interface NewAdmin {
  email: string;
  name: string;
  password: string;
  /** `-workspace`: an id or a name. */
  workspace: string | undefined;
}

export interface CreatedAdmin {
  user: User;
  workspace: Workspace;
  workspaceCreated: boolean;
}

/**
 * The workspace a new admin joins: the one `-workspace` names; without it, the only
 * workspace. On a database with none, a first workspace is made (named by `-workspace`
 * when it gives a name). Several workspaces and no `-workspace` is a usage error.
 */
async function workspaceForAdmin(
  db: Db,
  text: string | undefined,
): Promise<{ workspace: Workspace; created: boolean }> {
  const existing = await listWorkspaces(db, 2);
  if (text !== undefined) {
    const named = await findNamedWorkspace(db, text);
    if (named) return { workspace: named, created: false };
    if (existing.length > 0 || uuidPattern.test(text.trim())) {
      throw new CommandError(`-workspace: no workspace has the id or name "${text}"`);
    }
    const name = text.trim();
    if (!name) throw new UsageError('-workspace needs the id or name of a workspace');
    return { workspace: await createWorkspace(db, { name }), created: true };
  }
  if (existing.length > 1) {
    throw new UsageError(
      "this database holds several workspaces; name the new admin's with -workspace <id or name>",
    );
  }
  const [only] = existing;
  if (only) return { workspace: only, created: false };
  return { workspace: await createWorkspace(db, { name: FIRST_WORKSPACE_NAME }), created: true };
}

/** An admin account in one transaction with the workspace it may need (inputs already checked). */
export async function createAdminAccount(db: Db, input: NewAdmin): Promise<CreatedAdmin> {
  return inTransaction(db, async (tx) => {
    const { workspace, created } = await workspaceForAdmin(tx, input.workspace);
    const taken = () =>
      new CommandError(
        `-email: ${refuse('email_taken').message} in workspace ${describe(workspace)} (email_taken)`,
      );
    if (await findUserByEmail(tx, workspace.id, input.email)) throw taken();
    try {
      const user = await createAccount(tx, workspace.id, {
        email: input.email,
        name: input.name,
        password: input.password,
        role: 'admin',
      });
      return { user, workspace, workspaceCreated: created };
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      if (
        (error as { code?: string }).code === UNIQUE_VIOLATION ||
        cause?.code === UNIQUE_VIOLATION
      )
        throw taken();
      throw error;
    }
  });
}
