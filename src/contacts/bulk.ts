// Contacts a plugin creates in bulk (the importer): judged as createContact judges them,
// checked against the identities the workspace holds in one read, and written in batches
// inside the plugin's own transaction.
import { randomUUID } from 'node:crypto';
import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { AppError, refuse } from '../errors.js';
import { checkText, IDENTITIES_PER_CONTACT, TEXT_MAX } from '../limits.js';
import {
  findChannel,
  normaliseIdentity,
  type IdentityInput,
  type NormalisedIdentity,
} from './channels.js';
import { copyRows } from '../db/copy.js';
import { bumpContactCount } from './queries.js';
import { contactIdentities, contactSearch, contacts } from './tables.js';

/** A contact ready to be written: its name and identities, checked. */
export interface NewContact {
  name: string;
  identities: readonly NormalisedIdentity[];
}

/** Rows a bulk statement writes at most. */
const BATCH = 2_000;

/**
 * Judges a contact's details as `createContact` does (a name, identities on writable
 * channels, their caps): the contact ready to write, or the refusal it would get.
 */
export function prepareContact(input: {
  name: string;
  identities: readonly IdentityInput[];
}): NewContact | AppError {
  try {
    const name = input.name.trim();
    if (!name) throw refuse('contact_name_required');
    checkText(name, 'name', TEXT_MAX.name);
    const seen = new Set<string>();
    const identities: NormalisedIdentity[] = [];
    for (const given of input.identities) {
      const identity = normaliseIdentity(given);
      const key = identityKey(identity);
      if (!seen.has(key)) identities.push(identity);
      seen.add(key);
    }
    return { name, identities };
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

/** What makes two identities the same: their channel and identifier key. */
export function identityKey(identity: { channel: string; identifierKey: string }): string {
  return `${identity.channel}\u0000${identity.identifierKey}`;
}

/** The channels a caller may write identities on (`email`, `phone`, a plugin's writable ones). */
export function isWritableChannel(name: string): boolean {
  return findChannel(name)?.writable === true;
}

/**
 * The contacts of the workspace holding any of `identities`, by `identityKey`: one read
 * per channel and batch, along the identities' unique key.
 */
export async function identityHolders(
  db: Db,
  workspaceId: string,
  identities: readonly NormalisedIdentity[],
): Promise<Map<string, { contactId: string; contactName: string }>> {
  const held = new Map<string, { contactId: string; contactName: string }>();
  const byChannel = new Map<string, string[]>();
  for (const identity of identities) {
    const keys = byChannel.get(identity.channel);
    if (keys) keys.push(identity.identifierKey);
    else byChannel.set(identity.channel, [identity.identifierKey]);
  }
  for (const [channel, keys] of byChannel) {
    for (let i = 0; i < keys.length; i += BATCH) {
      const rows = await db
        .select({
          key: contactIdentities.identifierKey,
          contactId: contactIdentities.contactId,
          contactName: contacts.name,
        })
        .from(contactIdentities)
        .innerJoin(
          contacts,
          and(
            eq(contacts.workspaceId, contactIdentities.workspaceId),
            eq(contacts.id, contactIdentities.contactId),
          ),
        )
        .where(
          and(
            eq(contactIdentities.workspaceId, workspaceId),
            eq(contactIdentities.channel, channel),
            // One JSON parameter rather than a list of 2,000.
            sql`${contactIdentities.identifierKey} in (select jsonb_array_elements_text(${JSON.stringify(keys.slice(i, i + BATCH))}::jsonb))`,
          ),
        );
      for (const row of rows) {
        held.set(identityKey({ channel, identifierKey: row.key }), {
          contactId: row.contactId,
          contactName: row.contactName,
        });
      }
    }
  }
  return held;
}

/**
 * Writes contacts and their identities in the caller's transaction with COPY (no statement
 * to build, heap pages filled many rows at a time), and keeps the workspace's contact
 * count; records no per-contact event (the caller records its own summary, such as
 * `import.completed`). The caller has judged the identities free (`identityHolders`): one
 * another contact took meanwhile refuses the whole write with `identity_taken`, naming
 * that contact when `lookup` (a connection beside the transaction, which sees what others
 * committed) is given. `ids`, when given, are the contacts' ids in input order (a caller
 * that planned them, as an import's mapping does; fresh uuids, or the write fails on the
 * contacts' key); otherwise each gets a new one. Answers the ids in input order.
 */
export async function createContactsIn(
  tx: Db,
  workspaceId: string,
  newContacts: readonly NewContact[],
  options: { lookup?: Db; ids?: readonly string[] } = {},
): Promise<string[]> {
  if (options.ids && options.ids.length !== newContacts.length) {
    throw new Error('createContactsIn: one id per contact');
  }
  const ids = options.ids ? [...options.ids] : newContacts.map(() => randomUUID());
  if (newContacts.length === 0) return ids;
  await copyRows(
    tx,
    'contacts',
    ['workspace_id', 'id', 'name'],
    newContacts.map((contact, i) => [workspaceId, ids[i]!, contact.name]),
  );
  const count = newContacts.reduce((sum, contact) => sum + contact.identities.length, 0);
  // Created in input order, each a microsecond after the last and the last now, as
  // clock_timestamp() stamps one statement's rows: a contact's identities read oldest first.
  const last = Date.now() * 1000;
  /** Each identity's COPY row, made as the COPY takes it (no object of each held). */
  function* identityRows() {
    let n = 0;
    for (let i = 0; i < newContacts.length; i += 1) {
      for (const identity of newContacts[i]!.identities) {
        yield [
          workspaceId,
          ids[i]!,
          identity.channel,
          identity.identifier,
          identity.identifierKey,
          identity.displayName,
          microsecondsAt(last - (count - 1 - n)),
        ];
        n += 1;
      }
    }
  }
  try {
    await copyRows(
      tx,
      'contact_identities',
      [
        'workspace_id',
        'contact_id',
        'channel',
        'identifier',
        'identifier_key',
        'display_name',
        'created_at',
      ],
      identityRows(),
    );
  } catch (error) {
    if (!isTakenIdentity(error)) throw error;
    // Another contact took an address meanwhile (it committed, or the COPY would still wait).
    const identities = newContacts.flatMap((contact) => contact.identities);
    const holders = options.lookup
      ? await identityHolders(options.lookup, workspaceId, identities)
      : new Map<string, { contactId: string }>();
    const taken = identities.map((identity) => holders.get(identityKey(identity))).find(Boolean);
    throw refuse('identity_taken', { ownerContactId: taken?.contactId ?? '' });
  }
  await bumpContactCount(tx, workspaceId, newContacts.length);
  return ids;
}

/** A timestamp of `microseconds` since the epoch, as PostgreSQL reads one. */
function microsecondsAt(microseconds: number): string {
  const milliseconds = Math.floor(microseconds / 1000);
  // A thousand identities share a millisecond: its text is made once (a Date each cost
  // an import 35 ms of 50,000 contacts).
  if (milliseconds !== lastMillisecond) {
    lastMillisecond = milliseconds;
    lastIso = new Date(milliseconds).toISOString().slice(0, -1);
  }
  return `${lastIso}${String(microseconds % 1000).padStart(3, '0')}Z`;
}
let lastMillisecond = NaN;
let lastIso = '';

/** Whether `error` (as postgres.js or drizzle wraps it) is an identity's unique key taken. */
export function isTakenIdentity(error: unknown): boolean {
  let e = error as { code?: unknown; constraint_name?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth += 1, e = e.cause as typeof e) {
    if (e.code === '23505' && e.constraint_name === 'contact_identities_key') return true;
  }
  return false;
}

/** An identity to add to an existing contact of the workspace. */
export interface IdentityAddition {
  contactId: string;
  identity: NormalisedIdentity;
}

/** An identity `addIdentitiesIn` wrote. */
export type AddedIdentity = {
  id: string;
  contactId: string;
  channel: string;
  identifier: string;
};

/** Ids as one JSON parameter, read by the database as a set of uuids. */
const uuidsIn = (ids: readonly string[]) =>
  sql`(select (jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))::uuid)`;

/**
 * Adds identities to existing contacts of the workspace in the caller's transaction, in
 * batches, judged as `addContactIdentity` judges one: each contact is locked (in id order,
 * so two bulk writers never wait on each other in a circle) and its `updatedAt` touched;
 * an identity the contact already holds is left as it is; one another contact holds
 * refuses the whole write with `identity_taken` naming that contact; a contact missing
 * from the workspace refuses it with `contact_not_found`, one left holding more than
 * IDENTITIES_PER_CONTACT with `identities_full`. Records no event (the caller records its
 * own summary, as with `createContactsIn`). Answers the identities written.
 */
export async function addIdentitiesIn(
  tx: Db,
  workspaceId: string,
  additions: readonly IdentityAddition[],
): Promise<AddedIdentity[]> {
  const contactIds = [...new Set(additions.map((addition) => addition.contactId))].sort();
  for (let i = 0; i < contactIds.length; i += BATCH) {
    const batch = contactIds.slice(i, i + BATCH);
    const touched = await tx.execute<{ id: string }>(sql`
      with locked as (
        select id from ${contacts}
        where workspace_id = ${workspaceId} and id in ${uuidsIn(batch)}
        order by id for update
      )
      update ${contacts} set updated_at = now() from locked
      where contacts.workspace_id = ${workspaceId} and contacts.id = locked.id
      returning contacts.id`);
    if (touched.length < batch.length) throw refuse('contact_not_found');
  }
  const rows = additions.map(({ contactId, identity }) => ({ contactId, ...identity }));
  const added: AddedIdentity[] = [];
  for (let i = 0; i < rows.length; i += BATCH) {
    const batch = rows.slice(i, i + BATCH);
    const written = await tx.execute<AddedIdentity>(sql`
      ${insertIdentities(workspaceId, batch)}
      returning id, contact_id as "contactId", channel, identifier`);
    if (written.length < batch.length) await refuseHeldElsewhere(tx, workspaceId, batch);
    added.push(...written);
  }
  await refuseOverfull(tx, workspaceId, contactIds);
  return added;
}

/** Throws `identity_taken` if another contact than the one named holds one of `batch`. */
async function refuseHeldElsewhere(
  tx: Db,
  workspaceId: string,
  batch: readonly (NormalisedIdentity & { contactId: string })[],
): Promise<void> {
  const holders = await identityHolders(tx, workspaceId, batch);
  for (const identity of batch) {
    const holder = holders.get(identityKey(identity));
    if (holder && holder.contactId !== identity.contactId) {
      throw refuse('identity_taken', { ownerContactId: holder.contactId });
    }
  }
}

/**
 * Each of `ids` beside the identities it holds (`id`, `count`), counted along the contact
 * index one contact at a time: grouping the workspace's identities instead read its whole
 * index per batch (280 ms against 45 ms for 2,000 contacts among 150,000).
 */
const heldCounts = (workspaceId: string, ids: readonly string[]) => sql`(
  select given.id, held.count from ${uuidsIn(ids)} as given(id)
  cross join lateral (
    select count(*)::int as count from ${contactIdentities}
    where workspace_id = ${workspaceId} and contact_id = given.id
  ) as held) as counted`;

/** Throws `identities_full` if one of the contacts holds more than its cap. */
async function refuseOverfull(tx: Db, workspaceId: string, contactIds: readonly string[]) {
  for (let i = 0; i < contactIds.length; i += BATCH) {
    const counts = heldCounts(workspaceId, contactIds.slice(i, i + BATCH));
    const over = await tx.execute(sql`
      select id from ${counts} where count > ${IDENTITIES_PER_CONTACT} limit 1`);
    if (over.length > 0) throw refuse('identities_full', { max: IDENTITIES_PER_CONTACT });
  }
}

/**
 * How many identities each of `contactIds` holds in the workspace (a contact holding none,
 * or not the workspace's, is absent): what a bulk writer judges IDENTITIES_PER_CONTACT by.
 */
export async function identityCounts(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const distinct = [...new Set(contactIds)];
  for (let i = 0; i < distinct.length; i += BATCH) {
    const held = heldCounts(workspaceId, distinct.slice(i, i + BATCH));
    const rows = await db.execute<{ id: string; count: number }>(sql`
      select id, count from ${held} where count > 0`);
    for (const row of rows) counts.set(row.id, row.count);
  }
  return counts;
}

/** Contacts a bulk write must have created before `analyzeContacts` reads the tables. */
export const ANALYZE_AFTER_CONTACTS = 1_000;

/**
 * Brings the planner's statistics of contacts, identities and their search rows up to date after a bulk write
 * of `created` contacts committed. Autovacuum analyzes a table only once a tenth of it
 * changed (and may be off): until then the planner believes a workspace holds the
 * identities it held before, and `identityHolders` on the next import compared every
 * identity with every address (40,000 rows against 32,000 fresh identities: past the
 * 60 s deadline; 2 s analyzed). Call it after the write's transaction, never inside it:
 * ANALYZE holds its lock until the transaction ends, and would hold off another
 * workspace's import for that long. A failure only leaves the statistics as they were.
 */
export async function analyzeContacts(db: Db, created: number): Promise<void> {
  if (created < ANALYZE_AFTER_CONTACTS) return;
  await db.execute(sql`analyze ${contacts}, ${contactIdentities}, ${contactSearch}`);
}

/**
 * Locks the workspace's contacts `ids` for the caller's transaction, in id order (as an
 * erasure or a merge takes them, so neither deadlocks with it), and refuses
 * `contact_not_found` if one is gone: a bulk write into contacts judged earlier (an
 * import's merging rows) then never meets a contact erased meanwhile as a foreign-key error.
 */
export async function lockContactsIn(
  tx: Db,
  workspaceId: string,
  ids: readonly string[],
): Promise<void> {
  const sorted = [...new Set(ids)].sort();
  for (let i = 0; i < sorted.length; i += BATCH) {
    const batch = sorted.slice(i, i + BATCH);
    const locked = await tx.execute<{ id: string }>(sql`
      select id from ${contacts}
      where workspace_id = ${workspaceId} and id in ${uuidsIn(batch)}
      order by id for update`);
    if (locked.length < batch.length) throw refuse('contact_not_found');
  }
}

/**
 * The insert of a batch of identities (`contactId` with a prepared identity each), one
 * statement whatever its size; an address another contact took meanwhile is skipped (the
 * caller reads what was written from its own `returning`).
 */
function insertIdentities(workspaceId: string, batch: readonly object[]): SQL {
  return sql`
    insert into contact_identities
      (workspace_id, contact_id, channel, identifier, identifier_key, display_name, created_at)
    select ${workspaceId}, row."contactId", row.channel, row.identifier, row."identifierKey",
      row."displayName", clock_timestamp()
    from jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) as row(
      "contactId" uuid, channel text, identifier text, "identifierKey" text, "displayName" text)
    on conflict (workspace_id, channel, identifier_key) do nothing`;
}
