// How notes follow their contact (docs/contacts.md): erased with it, moved on a merge.
import { sql } from 'drizzle-orm';
import { redactEvents, type ContactDataHooks } from '../../src/plugin-sdk/index.js';

const ids = (list: readonly string[]) => `{${list.join(',')}}`;

export const noteContactData: ContactDataHooks = {
  async erase({ db, workspaceId }, contactIds) {
    const gone = await db.execute<{ id: string }>(sql`
      delete from notes
      where workspace_id = ${workspaceId} and contact_id = any(${ids(contactIds)}::uuid[])
      returning id`);
    // note.created carries the body, which may well name the contact.
    await redactEvents(
      db,
      workspaceId,
      gone.map((row) => row.id),
    );
  },
  async merge({ db, workspaceId }, { targetId, sourceIds }) {
    await db.execute(sql`
      update notes set contact_id = ${targetId}
      where workspace_id = ${workspaceId} and contact_id = any(${ids(sourceIds)}::uuid[])`);
  },
};
