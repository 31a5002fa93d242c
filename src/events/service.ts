import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { withSubject } from './subject.js';
import { events } from './tables.js';

/** The NOTIFY channel events are announced on; the payload names the row. */
export const EVENTS_CHANNEL = 'svc_events';
/**
 * Announced (empty payload) at commit when an event enqueued webhook deliveries, so every
 * process's webhook worker claims them at once instead of at its next poll.
 */
export const DELIVERIES_CHANNEL = 'svc_webhook_deliveries';

export interface NewEvent {
  workspaceId: string;
  /** `contact.created`, `task.updated`, … (docs/events.md). */
  name: string;
  /**
   * The record the event is about (a contact, a task, a note). Required: an automation
   * cannot act on an event that does not say which record changed.
   */
  subjectId: string;
  /**
   * The `data` key that carries `subjectId`, only where a contract fixes another name.
   * @default the name's first segment plus `Id` (`contact.created` → `contactId`)
   */
  subjectKey?: string;
  /** One account may see it (task events reach their assignee); null: everyone. */
  audienceUserId?: string | null;
  actorUserId?: string | null;
  /** Plain JSON, delivered verbatim; the subject's id is added under `subjectKey`. */
  data?: Record<string, unknown>;
}

export interface EventNotice {
  workspaceId: string;
  id: string;
  name: string;
  audienceUserId: string | null;
  subjectId: string | null;
  /** When the row was recorded (ISO 8601). */
  at: string;
}

/**
 * Records an event in the caller's transaction (`db` is the transaction) and announces it
 * with NOTIFY, which PostgreSQL delivers to every listening process only at commit: a
 * rolled-back write announces nothing. `data` always carries the subject's id (see
 * `withSubject`), for core and plugin events alike.
 */
export async function recordEvent(db: Db, event: NewEvent): Promise<string> {
  const id = randomUUID();
  const data = withSubject(event.name, event.subjectId, event.data, event.subjectKey);
  const [row] = await db
    .insert(events)
    .values({
      workspaceId: event.workspaceId,
      id,
      name: event.name,
      subjectId: event.subjectId,
      audienceUserId: event.audienceUserId ?? null,
      actorUserId: event.actorUserId ?? null,
      data,
    })
    .returning({ at: events.at });
  const notice: EventNotice = {
    workspaceId: event.workspaceId,
    id,
    name: event.name,
    audienceUserId: event.audienceUserId ?? null,
    subjectId: event.subjectId,
    at: (row?.at ?? new Date()).toISOString(),
  };
  // Outbox: one delivery per live subscription listing the name, in the same transaction,
  // and both announcements, in one statement (a data-modifying WITH runs exactly once).
  await db.execute(sql`
    with enqueued as (
      insert into webhook_deliveries (workspace_id, webhook_id, event_id)
      select workspace_id, id, ${id}::uuid from webhooks
      where workspace_id = ${event.workspaceId}::uuid and deleted_at is null
        and ${event.name} = any(events)
      on conflict do nothing
      returning 1
    )
    select pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(notice)}),
      case when exists (select 1 from enqueued) then pg_notify(${DELIVERIES_CHANNEL}, '') end`);
  return id;
}
