// How custom field values follow their contact (docs/contacts.md, docs/fields.md): erased
// with it; on a merge the target's own value wins, a source's fills a field the target left
// empty (the first source listed first), and repeater entries are appended after the
// target's, in the order the sources were given.
import { sql } from 'drizzle-orm';
import { refuse, type ContactDataHooks, type Db } from '../../src/plugin-sdk/index.js';

const ids = (list: readonly string[]) => `{${list.join(',')}}`;

/** Refuses the merge when a repeater of the target would hold more than the cap. */
async function checkEntryRoom(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
  max: number,
): Promise<void> {
  const [fullest] = await db.execute<{ count: number }>(sql`
    select count(*)::int as count from contact_field_entries
    where workspace_id = ${workspaceId} and contact_id = any(${ids(contactIds)}::uuid[])
    group by field_id order by count desc limit 1`);
  if ((fullest?.count ?? 0) > max) throw refuse('field_entries_full', { max });
}

export const fieldsContactData: ContactDataHooks = {
  async erase({ db, workspaceId }, contactIds) {
    // The contact.fields_changed events are the contact's own: the core redacts them.
    await db.execute(sql`
      delete from contact_field_values
      where workspace_id = ${workspaceId} and contact_id = any(${ids(contactIds)}::uuid[])`);
    await db.execute(sql`
      delete from contact_field_entries
      where workspace_id = ${workspaceId} and contact_id = any(${ids(contactIds)}::uuid[])`);
  },
  async merge({ db, workspaceId, config }, { targetId, sourceIds }) {
    const sources = ids(sourceIds);
    await db.execute(sql`
      insert into contact_field_values (workspace_id, contact_id, field_id, value)
      select distinct on (field_id) workspace_id, ${targetId}::uuid, field_id, value
      from contact_field_values
      where workspace_id = ${workspaceId} and contact_id = any(${sources}::uuid[])
      order by field_id, array_position(${sources}::uuid[], contact_id)
      on conflict (workspace_id, contact_id, field_id) do nothing`);
    // Counted under the merge's lock on the contacts' rows. An entry added to the target
    // meanwhile waits on that lock at its insert (its foreign key), after its own count.
    await checkEntryRoom(db, workspaceId, [targetId, ...sourceIds], config.fields.entriesMax);
    // Entries list by (created_at, id): restamped just after the target's newest (and
    // now), one microsecond apart, they come after the target's in the sources' order.
    await db.execute(sql`
      with moved as (
        select id, row_number() over (
          order by array_position(${sources}::uuid[], contact_id), created_at, id) as n
        from contact_field_entries
        where workspace_id = ${workspaceId} and contact_id = any(${sources}::uuid[])
      ), base as (
        select greatest(now(), max(created_at)) as at from contact_field_entries
        where workspace_id = ${workspaceId} and contact_id = ${targetId}
      )
      update contact_field_entries e
      set contact_id = ${targetId}, created_at = (select at from base) + moved.n * interval '1 microsecond'
      from moved
      where e.workspace_id = ${workspaceId} and e.id = moved.id`);
  },
};
