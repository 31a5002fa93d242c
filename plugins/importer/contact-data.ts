// How staged import rows follow the contact they name (docs/contacts.md, docs/importer.md).
// A row links the contact it created or the one holding its address (identity_taken_by,
// whose meta names it). Erased: the row stays in its import, unlinked, its cells and plan
// blanked (they are the contact's name and addresses as uploaded) and its reason without
// the name.
// Merged: the row links the target, and names it.
import { sql } from 'drizzle-orm';
import { findContactRef, type ContactDataHooks } from '../../src/plugin-sdk/index.js';

const ids = (list: readonly string[]) => `{${list.join(',')}}`;

export const importerContactData: ContactDataHooks = {
  async erase({ db, workspaceId }, contactIds) {
    // The row's plan goes too (it holds the same details, prepared): an import not yet
    // committed then has no plan standing, and its commit judges every row again.
    await db.execute(sql`
      with erased as (
        update import_rows set
          contact_id = null,
          cells = (select coalesce(jsonb_agg('""'::jsonb), '[]'::jsonb)
                   from jsonb_array_elements(cells)),
          reason = case when reason->>'code' = 'identity_taken_by'
            then '{"code": "identity_taken", "meta": {}}'::jsonb else reason end,
          plan = null
        where workspace_id = ${workspaceId} and contact_id = any(${ids(contactIds)}::uuid[])
        returning import_id
      )
      update imports set planned_with = null
      where workspace_id = ${workspaceId} and id in (select import_id from erased)
        and planned_with is not null`);
  },
  async merge({ db, workspaceId }, { targetId, sourceIds }) {
    const target = await findContactRef(db, workspaceId, targetId);
    await db.execute(sql`
      update import_rows set
        contact_id = ${targetId},
        reason = case when reason->>'code' = 'identity_taken_by'
          then jsonb_set(reason, '{meta,ownerName}', to_jsonb(${target?.name ?? ''}::text))
          else reason end
      where workspace_id = ${workspaceId} and contact_id = any(${ids(sourceIds)}::uuid[])`);
  },
};
