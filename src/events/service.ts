import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { preparedSql } from '../db/prepared.js';
import { enqueueParts } from '../webhooks/outbox.js';
import { withSubject } from './subject.js';
import { events } from './tables.js';

/** The NOTIFY channel events are announced on; the payload names the row. */
export const EVENTS_CHANNEL = 'svc_events';

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
 * Records an event in the caller's transaction (`db` is the transaction), with its
 * webhook deliveries, and announces it with NOTIFY, which PostgreSQL delivers to every
 * listening process only at commit: a rolled-back write announces and delivers nothing.
 * `data` always carries the subject's id (see `withSubject`), for core and plugin events
 * alike. One statement writes the event, its deliveries (the webhooks domain's outbox
 * part) and both notices: a write's event costs one round trip.
 */
export async function recordEvent(db: Db, event: NewEvent): Promise<string> {
  const id = randomUUID();
  await recordStatement(db, {
    workspaceId: event.workspaceId,
    id,
    name: event.name,
    subjectId: event.subjectId,
    audienceUserId: event.audienceUserId ?? null,
    actorUserId: event.actorUserId ?? null,
    data: JSON.stringify(withSubject(event.name, event.subjectId, event.data, event.subjectKey)),
  });
  return id;
}

/**
 * recordEvent's statement, built once and prepared (`preparedSql`): every write with an
 * event runs it, and building it through Drizzle each time was a fifth of a writer's CPU.
 */
const recordStatement = preparedSql<Record<string, string | null>, unknown>(() => {
  const value = (name: string) => sql.placeholder(name);
  // Outbox: the webhooks domain enqueues the event's deliveries (and wakes its workers) in
  // this same statement, so the event and its deliveries commit together.
  const outbox = enqueueParts({
    workspaceId: value('workspaceId'),
    id: value('id'),
    name: value('name'),
  });
  // The notice's `at` as JavaScript writes an ISO 8601 instant (milliseconds, UTC).
  const notice = sql`json_build_object('workspaceId', ${value('workspaceId')}::text,
    'id', ${value('id')}::text, 'name', ${value('name')}::text,
    'audienceUserId', ${value('audienceUserId')}::text,
    'subjectId', ${value('subjectId')}::text,
    'at', to_char(recorded.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text`;
  return sql`
    with recorded as (
      insert into ${events} (workspace_id, id, name, subject_id, audience_user_id,
        actor_user_id, data)
      values (${value('workspaceId')}::uuid, ${value('id')}::uuid, ${value('name')}::text,
        ${value('subjectId')}::uuid, ${value('audienceUserId')}::uuid,
        ${value('actorUserId')}::uuid, ${value('data')}::jsonb)
      returning ${events.at} as at
    ), ${outbox.with}
    select pg_notify(${EVENTS_CHANNEL}, ${notice}), ${outbox.wake} from recorded`;
});
