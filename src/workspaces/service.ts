import { asc } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { workspaces, type Workspace } from './tables.js';

export async function createWorkspace(db: Db, input: { name: string }): Promise<Workspace> {
  const [row] = await db.insert(workspaces).values({ name: input.name }).returning();
  return row as Workspace;
}

/** The oldest workspace, or undefined on an empty database. */
export async function findFirstWorkspace(db: Db): Promise<Workspace | undefined> {
  const [row] = await db.select().from(workspaces).orderBy(asc(workspaces.createdAt)).limit(1);
  return row;
}
