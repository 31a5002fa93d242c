import { asc, eq, sql } from 'drizzle-orm';
import type { Config } from '../config.js';
import { workspaceCounts } from '../contacts/tables.js';
import type { Db } from '../db/client.js';
import { announceRevocation } from '../events/revocations.js';
import { users } from '../users/tables.js';
import { workspaces, type Workspace } from './tables.js';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function createWorkspace(db: Db, input: { name: string }): Promise<Workspace> {
  const [row] = await db.insert(workspaces).values({ name: input.name }).returning();
  return row as Workspace;
}

/** The oldest workspace, or undefined on an empty database. */
export async function findFirstWorkspace(db: Db): Promise<Workspace | undefined> {
  const [row] = await db.select().from(workspaces).orderBy(asc(workspaces.createdAt)).limit(1);
  return row;
}

/** One workspace by id (uncached; see cache.ts for the per-process cached read). */
export async function findWorkspaceById(db: Db, id: string): Promise<Workspace | undefined> {
  if (!uuidPattern.test(id)) return undefined;
  const [row] = await db.select().from(workspaces).where(eq(workspaces.id, id)).limit(1);
  return row;
}

/** Workspaces whose name is `name`, ignoring case and outer spaces. */
export async function workspacesWithName(db: Db, name: string): Promise<Workspace[]> {
  return db
    .select()
    .from(workspaces)
    .where(eq(sql`lower(${workspaces.name})`, name.trim().toLowerCase()))
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id));
}

/**
 * Deactivates (`at` a date) or reactivates (`at` null) a workspace. Nothing else changes:
 * its accounts, sessions, tokens and records stay, and the credential reads (which check
 * `deactivated_at is null` on every request, uncached) refuse or accept them at once.
 * Deactivating also ends every stream open in the workspace, in every process, at commit.
 */
export async function setWorkspaceDeactivated(
  db: Db,
  id: string,
  at: Date | null,
): Promise<Workspace | undefined> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(workspaces)
      .set({ deactivatedAt: at })
      .where(eq(workspaces.id, id))
      .returning();
    if (row && at !== null) await announceRevocation(tx, { workspaceId: row.id });
    return row;
  });
}

export interface WorkspaceSummary {
  workspace: Workspace;
  accounts: number;
  contacts: number;
}

/** Every workspace, oldest first, with its account count and its kept contact count. */
export async function listWorkspaceSummaries(db: Db): Promise<WorkspaceSummary[]> {
  const accountCounts = db
    .select({
      workspaceId: users.workspaceId,
      n: sql<number>`count(*)::int`.as('n'),
    })
    .from(users)
    .groupBy(users.workspaceId)
    .as('account_counts');
  const rows = await db
    .select({
      workspace: workspaces,
      accounts: sql<number>`coalesce(${accountCounts.n}, 0)::int`,
      contacts: sql<number>`coalesce(${workspaceCounts.contacts}, 0)::bigint`,
    })
    .from(workspaces)
    .leftJoin(accountCounts, eq(accountCounts.workspaceId, workspaces.id))
    .leftJoin(workspaceCounts, eq(workspaceCounts.workspaceId, workspaces.id))
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id));
  return rows.map((row) => ({
    workspace: row.workspace,
    accounts: Number(row.accounts),
    contacts: Number(row.contacts),
  }));
}

/**
 * SVC_TENANT_MACHINE_GRACE: whether a channel delivery (an inbound message a channel
 * plugin receives for this workspace) is still recorded. An active workspace always
 * records; a deactivated one keeps recording for the grace after `deactivatedAt`, then
 * refuses; a grace of 0 refuses at once.
 */
export function acceptsChannelDeliveries(
  workspace: { deactivatedAt: Date | null },
  config: Config,
  now = Date.now(),
): boolean {
  if (!workspace.deactivatedAt) return true;
  const grace = config.workspaces.machineGraceMs;
  if (grace <= 0) return false;
  return now - workspace.deactivatedAt.getTime() < grace;
}

/**
 * What a channel plugin asks before it stores a delivery for `workspaceId`: false for a
 * workspace that does not exist or whose SVC_TENANT_MACHINE_GRACE has run out. Reads the
 * table itself rather than the per-process cache, so "0s stops at once" holds in every
 * process the moment an operator deactivates the workspace (one primary-key read).
 */
export async function acceptChannelDelivery(
  scope: { database: { db: Db }; config: Config },
  workspaceId: string,
  now = Date.now(),
): Promise<boolean> {
  const workspace = await findWorkspaceById(scope.database.db, workspaceId);
  return workspace !== undefined && acceptsChannelDeliveries(workspace, scope.config, now);
}

/**
 * The deployment's workspace when it has exactly one, else null: a setting of the
 * environment (a chat number) can serve a single-workspace deployment without naming it.
 */
export async function soleWorkspaceId(db: Db): Promise<string | null> {
  const rows = await db.select({ id: workspaces.id }).from(workspaces).limit(2);
  return rows.length === 1 ? rows[0]!.id : null;
}
