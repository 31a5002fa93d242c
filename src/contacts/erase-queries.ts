import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { contactIdentities, contacts } from './tables.js';

/** A list of ids as one array parameter. */
export function uuidArray(ids: readonly string[]) {
  return sql`${`{${ids.join(',')}}`}::uuid[]`;
}

/**
 * Locks the contacts of the workspace among `ids` (FOR UPDATE) in id order, the one order
 * every erasure and merge takes them in, so two racing over the same contacts queue rather
 * than deadlock. Answers the ids found.
 */
export async function lockContacts(
  db: Db,
  workspaceId: string,
  ids: readonly string[],
): Promise<string[]> {
  const rows = await db.execute<{ id: string }>(sql`
    select id from ${contacts}
    where workspace_id = ${workspaceId} and id = any(${uuidArray(ids)})
    order by id
    for update`);
  return rows.map((row) => row.id);
}

/** Deletes the contacts (their identities go by the foreign key's cascade); answers how many. */
export async function deleteContactRows(
  db: Db,
  workspaceId: string,
  ids: readonly string[],
): Promise<number> {
  const rows = await db
    .delete(contacts)
    .where(and(eq(contacts.workspaceId, workspaceId), sql`${contacts.id} = any(${uuidArray(ids)})`))
    .returning({ id: contacts.id });
  return rows.length;
}

/** How many identities the contacts hold together. */
export async function countIdentitiesOfAll(
  db: Db,
  workspaceId: string,
  ids: readonly string[],
): Promise<number> {
  const [row] = await db
    .select({ count: sql<number>`count(*)::int` })
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, workspaceId),
        sql`${contactIdentities.contactId} = any(${uuidArray(ids)})`,
      ),
    );
  return row?.count ?? 0;
}

/** Moves the sources' identities to the target. */
export async function moveIdentities(
  db: Db,
  workspaceId: string,
  targetId: string,
  sourceIds: readonly string[],
): Promise<void> {
  await db
    .update(contactIdentities)
    .set({ contactId: targetId })
    .where(
      and(
        eq(contactIdentities.workspaceId, workspaceId),
        sql`${contactIdentities.contactId} = any(${uuidArray(sourceIds)})`,
      ),
    );
}
