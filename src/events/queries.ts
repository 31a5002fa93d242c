import { and, eq, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { events, type Event } from './tables.js';

/** What an event's webhook envelope carries (docs/events.md). */
export type EventEnvelope = Pick<Event, 'workspaceId' | 'id' | 'name' | 'at' | 'data'>;

/**
 * Events by (workspace, id) in one read, for the webhook worker's envelopes; absent ones
 * are left out.
 */
export async function selectEnvelopes(
  db: Db,
  keys: readonly { workspaceId: string; id: string }[],
): Promise<EventEnvelope[]> {
  if (keys.length === 0) return [];
  return db
    .select({
      workspaceId: events.workspaceId,
      id: events.id,
      name: events.name,
      at: events.at,
      data: events.data,
    })
    .from(events)
    .where(
      or(...keys.map((key) => and(eq(events.workspaceId, key.workspaceId), eq(events.id, key.id)))),
    );
}

/**
 * The `data` of one event of the workspace (a subscription turning a notice into the
 * record it names); undefined when there is none.
 */
export async function eventData(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<Record<string, unknown> | undefined> {
  const [row] = await db
    .select({ data: events.data })
    .from(events)
    .where(and(eq(events.workspaceId, workspaceId), eq(events.id, id)));
  return row?.data as Record<string, unknown> | undefined;
}

/**
 * Housekeeping, one round: at most `limit` events recorded more than `olderThanMs` ago
 * that nothing reads any more. `stillRead` is a condition on the `events` row from the
 * domains that read an event after its write (the webhook outbox: a pending delivery);
 * an event it holds stays whatever its age. Events are never replayed to streams, so
 * nothing else reads an old one. Answers how many went.
 */
export async function deleteOldEvents(
  db: Db,
  olderThanMs: number,
  stillRead: SQL,
  limit: number,
): Promise<number> {
  const gone = await db.execute(sql`
    delete from ${events}
    where ctid = any(array(
      select ctid from ${events}
      where ${events.at} < now() - ${olderThanMs} * interval '1 millisecond'
        and not (${stillRead})
      limit ${limit}
      for update skip locked))
    returning 1`);
  return gone.length;
}
