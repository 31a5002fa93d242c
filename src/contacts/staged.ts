// Contacts written from rows a plugin staged in its own tables (the importer's mapping):
// one `insert … select` a table, the database reading the rows where they lie, so a bulk
// write sends no row to PostgreSQL and the serving process holds none. The caller judged
// the rows beforehand (prepareContact, identityHolders); what another writer did since is
// refused here, as by the in-memory bulk writes (bulk.ts).
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { IDENTITIES_PER_CONTACT } from '../limits.js';
import { isTakenIdentity } from './bulk.js';
import { bumpContactCount } from './queries.js';

/**
 * What `createContactsFrom` reads: `contacts`, a select answering `id` (a fresh uuid the
 * caller planned) and `name` (as `prepareContact` answered it); `identities`, one
 * answering `contact_id` (one of those ids), `channel`, `identifier`, `identifier_key`
 * and `display_name` (a `NormalisedIdentity`), in the order they are written.
 */
export interface StagedContacts {
  contacts: SQL;
  identities: SQL;
}

/**
 * Creates the contacts `source` stages, with their identities, in the caller's transaction,
 * and keeps the workspace's contact count; records no per-contact event. Identities are
 * stamped with `clock_timestamp()` in source order, so a contact's read oldest first.
 * An identity another contact took meanwhile refuses the whole write with
 * `identity_taken`, naming that contact when `lookup` (a connection beside the
 * transaction, which sees what the other writer committed) is given. Answers how many
 * contacts were created.
 */
export async function createContactsFrom(
  tx: Db,
  workspaceId: string,
  source: StagedContacts,
  options: { lookup?: Db } = {},
): Promise<number> {
  const [created] = await tx.execute<{ count: number }>(sql`
    with written as (
      insert into contacts (workspace_id, id, name)
      select ${workspaceId}, staged.id, staged.name from (${source.contacts}) as staged
      returning 1
    )
    select count(*)::int as count from written`);
  const count = created!.count;
  if (count === 0) return 0;
  try {
    await tx.execute(sql`
      insert into contact_identities
        (workspace_id, contact_id, channel, identifier, identifier_key, display_name, created_at)
      select ${workspaceId}, staged.contact_id, staged.channel, staged.identifier,
        staged.identifier_key, staged.display_name, clock_timestamp()
      from (${source.identities}) as staged`);
  } catch (error) {
    if (!isTakenIdentity(error)) throw error;
    throw refuse('identity_taken', {
      ownerContactId: options.lookup
        ? await holderOf(options.lookup, workspaceId, source.identities)
        : '',
    });
  }
  await bumpContactCount(tx, workspaceId, count);
  return count;
}

/** A contact of the workspace holding one of the staged identities (what `lookup` sees). */
async function holderOf(lookup: Db, workspaceId: string, identities: SQL): Promise<string> {
  const [held] = await lookup.execute<{ contactId: string }>(sql`
    select held.contact_id as "contactId"
    from (${identities}) as staged
    join contact_identities as held on held.workspace_id = ${workspaceId}
      and held.channel = staged.channel and held.identifier_key = staged.identifier_key
      and held.contact_id <> staged.contact_id
    limit 1`);
  return held?.contactId ?? '';
}

/**
 * Locks the workspace's contacts a select answers (`contact_id`) for the caller's
 * transaction, in id order, as `lockContactsIn` does, and refuses `contact_not_found` if
 * one is gone; `touch` also sets their `updatedAt` (contacts gaining identities).
 */
export async function lockContactsFrom(
  tx: Db,
  workspaceId: string,
  contactIds: SQL,
  options: { touch?: boolean } = {},
): Promise<void> {
  const [locked] = await tx.execute<{ wanted: number; locked: number }>(sql`
    with wanted as (select distinct staged.contact_id as id from (${contactIds}) as staged),
    locked as (
      select contacts.id from contacts
      where contacts.workspace_id = ${workspaceId} and contacts.id in (select id from wanted)
      order by contacts.id for update
    )${
      options.touch
        ? sql`,
    touched as (
      update contacts set updated_at = now() from locked
      where contacts.workspace_id = ${workspaceId} and contacts.id = locked.id
      returning 1
    )
    select (select count(*)::int from wanted) as wanted,
      (select count(*)::int from touched) as locked`
        : sql`
    select (select count(*)::int from wanted) as wanted,
      (select count(*)::int from locked) as locked`
    }`);
  if (locked!.locked < locked!.wanted) throw refuse('contact_not_found');
}

/**
 * Adds the identities a select stages (the columns `createContactsFrom` reads) to
 * existing contacts of the workspace, in the caller's transaction, judged as
 * `addIdentitiesIn` judges them: the contacts locked in id order and their `updatedAt`
 * touched, one that is gone refused `contact_not_found`; an identity the contact already
 * holds left as it is, one another contact holds refusing the whole write with
 * `identity_taken` (`meta.ownerContactId`); a contact left holding more than
 * IDENTITIES_PER_CONTACT refused `identities_full`. Answers how many were written.
 */
export async function addIdentitiesFrom(
  tx: Db,
  workspaceId: string,
  identities: SQL,
): Promise<number> {
  await lockContactsFrom(tx, workspaceId, identities, { touch: true });
  const [written] = await tx.execute<{ staged: number; written: number }>(sql`
    with staged as materialized (select * from (${identities}) as staged),
    written as (
      insert into contact_identities
        (workspace_id, contact_id, channel, identifier, identifier_key, display_name, created_at)
      select ${workspaceId}, staged.contact_id, staged.channel, staged.identifier,
        staged.identifier_key, staged.display_name, clock_timestamp()
      from staged
      on conflict (workspace_id, channel, identifier_key) do nothing
      returning 1
    )
    select (select count(*)::int from staged) as staged,
      (select count(*)::int from written) as written`);
  if (written!.written < written!.staged) {
    const holder = await holderOf(tx, workspaceId, identities);
    if (holder) throw refuse('identity_taken', { ownerContactId: holder });
  }
  const [over] = await tx.execute(sql`
    select 1 from (select distinct staged.contact_id as id from (${identities}) as staged) as named
    where (select count(*) from contact_identities as held
      where held.workspace_id = ${workspaceId} and held.contact_id = named.id)
      > ${IDENTITIES_PER_CONTACT}
    limit 1`);
  if (over) throw refuse('identities_full', { max: IDENTITIES_PER_CONTACT });
  return written!.written;
}
