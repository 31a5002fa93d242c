import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';

/**
 * Erases what stored events say about records being forgotten (docs/contacts.md,
 * "Events"): every event of the workspace whose subject is one of `subjectIds` keeps its
 * id, name, time and the subject's id, and its `data` becomes `{<subject key>: id,
 * redacted: true}`. Runs in the erasing transaction. Webhook deliveries build their body
 * from the stored event at each attempt, so a pending delivery sends the redacted data;
 * streams carry only names and ids. Answers how many events were redacted.
 */
export async function redactEvents(
  db: Db,
  workspaceId: string,
  subjectIds: readonly string[],
): Promise<number> {
  if (subjectIds.length === 0) return 0;
  // The subject's own key is the one whose value is its id (contactId, conversation_id…).
  const rows = await db.execute<{ id: string }>(sql`
    update events set data = coalesce(
      (select jsonb_object_agg(key, value) from jsonb_each(events.data)
        where value = to_jsonb(events.subject_id::text)), '{}'::jsonb)
      || '{"redacted": true}'::jsonb
    where workspace_id = ${workspaceId}
      and subject_id = any(${`{${subjectIds.join(',')}}`}::uuid[])
      and not (data ? 'redacted')
    returning id`);
  return rows.length;
}
