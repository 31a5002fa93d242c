import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { events } from './tables.js';

/** An event's envelope as `envelopeJson` reads it. */
export interface EnvelopeParts {
  name: string;
  /** Epoch milliseconds of `at` (whole: the envelope shows milliseconds). */
  atMs: number;
  data: Record<string, unknown>;
}

/**
 * The event a row of another domain names by its columns (`workspaceId`, `eventId`), as
 * one JSON value of `EnvelopeParts`, or null when the event is gone: a column for that
 * domain's statement (the webhook claim reads each delivery's envelope with its claim).
 */
export function envelopeJson(workspaceId: PgColumn, eventId: PgColumn): SQL {
  return sql`(select json_build_object('name', ${events.name},
      'atMs', floor(extract(epoch from ${events.at}) * 1000), 'data', ${events.data})
    from ${events} where ${events.workspaceId} = ${workspaceId} and ${events.id} = ${eventId})`;
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
