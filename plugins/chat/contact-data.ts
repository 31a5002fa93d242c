// How chat data follows its contact (docs/contacts.md, docs/chat.md): an erased contact's
// conversations go with their messages and stored media bytes (the foreign keys cascade),
// what the plugin's events said of them is redacted, and the refused inbound items its
// platform ids sent are dropped; a merge moves the conversations to the target.
import { sql } from 'drizzle-orm';
import { redactEvents, type ContactDataHooks } from '../../src/plugin-sdk/index.js';

const ids = (list: readonly string[]) => `{${list.join(',')}}`;

export const chatContactData: ContactDataHooks = {
  async erase({ db, workspaceId }, contactIds) {
    const gone = await db.execute<{ id: string; peer: string }>(sql`
      delete from chat_conversations
      where workspace_id = ${workspaceId} and contact_id = any(${ids(contactIds)}::uuid[])
      returning id, peer`);
    if (gone.length === 0) return;
    // chat.message.received carries the contact's name and the message's text.
    await redactEvents(
      db,
      workspaceId,
      gone.map((row) => row.id),
    );
    const peers = [...new Set(gone.map((row) => row.peer))];
    await db.execute(sql`
      delete from chat_refused_inbound
      where workspace_id = ${workspaceId}
        and peer in (${sql.join(
          peers.map((peer) => sql`${peer}`),
          sql`, `,
        )})`);
  },
  async merge({ db, workspaceId }, { targetId, sourceIds }) {
    await db.execute(sql`
      update chat_conversations set contact_id = ${targetId}
      where workspace_id = ${workspaceId} and contact_id = any(${ids(sourceIds)}::uuid[])`);
  },
};
