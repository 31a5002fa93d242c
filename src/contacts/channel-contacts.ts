// The contact behind an identity a platform delivers (a chat handle): matched when the
// workspace knows it, else created, inside the plugin's transaction (SDK: contactForIdentity).
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { recordEvent } from '../events/service.js';
import { checkText, longerThan, TEXT_MAX } from '../limits.js';
import { channelName, findChannel, type NormalisedIdentity } from './channels.js';
import {
  bumpContactCount,
  findContactRef,
  findIdentityByKey,
  insertContact,
  insertIdentity,
} from './queries.js';

export interface DeliveredIdentity {
  /** A declared channel; a plugin's own (`chat`) need not be writable through the graph. */
  channel: string;
  identifier: string;
  /** The name the platform shows for it (a profile name), if any. */
  displayName?: string | null;
}

export interface IdentityContact {
  contactId: string;
  contactName: string;
  /** Whether this call created the contact. */
  created: boolean;
}

/**
 * A platform's identity checked and keyed like any other, refused only when unusable and
 * then with the graph's reasons (normaliseIdentity): blank is `identity_identifier_required`,
 * text past the rule `text_invalid` or `text_too_long`, one naming no one on its channel (a
 * phone number without a digit) `identity_identifier_malformed`.
 */
function delivered(identity: DeliveredIdentity): NormalisedIdentity {
  const channel = findChannel(identity.channel);
  if (!channel) throw refuse('channel_unknown', { channel: channelName(identity.channel) });
  const identifier = identity.identifier.trim();
  if (!identifier) throw refuse('identity_identifier_required');
  checkText(identifier, 'identifier', TEXT_MAX.identifier);
  const identifierKey = channel.key(identifier);
  if (!identifierKey) throw refuse('identity_identifier_malformed', { channel: channel.name });
  const displayName = clip(identity.displayName?.trim() || '', TEXT_MAX.displayName) || null;
  return { channel: channel.name, identifier, identifierKey, displayName };
}

/**
 * Text the database can store, cut to `max` characters: a platform's profile name is not
 * ours to refuse, so a NUL is dropped and a lone surrogate replaced.
 */
function clip(text: string, max: number): string {
  const stored = text.replaceAll('\u0000', '').toWellFormed();
  return longerThan(stored, max) ? [...stored].slice(0, max).join('') : stored;
}

/**
 * The contact holding `identity` in the workspace. When none does, the first of `alsoMatch`
 * that some contact holds (the same person's phone number) gains the identity; else a
 * contact is created, named by the identity's display name (or its identifier), holding the
 * identity and every `alsoMatch` identity no one holds, with `contact.created` recorded.
 * Runs in the caller's transaction, serialised per identity, so two deliveries from one
 * new sender create one contact.
 */
export async function contactForIdentity(
  tx: Db,
  workspaceId: string,
  identity: DeliveredIdentity,
  alsoMatch: readonly DeliveredIdentity[] = [],
): Promise<IdentityContact> {
  const wanted = delivered(identity);
  await tx.execute(
    sql`select pg_advisory_xact_lock(hashtextextended(${`${workspaceId}:${wanted.channel}:${wanted.identifierKey}`}, 0))`,
  );
  const held = await findIdentityByKey(tx, workspaceId, wanted.channel, wanted.identifierKey);
  if (held) return holderOf(tx, workspaceId, held.contactId, false);
  const others = alsoMatch.map(delivered);
  for (const other of others) {
    const match = await findIdentityByKey(tx, workspaceId, other.channel, other.identifierKey);
    if (!match) continue;
    await addIdentity(tx, workspaceId, match.contactId, wanted);
    return holderOf(tx, workspaceId, match.contactId, false);
  }
  const name = wanted.displayName ?? clip(wanted.identifier, TEXT_MAX.name);
  const contact = await insertContact(tx, workspaceId, name);
  await bumpContactCount(tx, workspaceId, 1);
  await recordEvent(tx, {
    workspaceId,
    name: 'contact.created',
    subjectId: contact.id,
    data: { name: contact.name },
  });
  await addIdentity(tx, workspaceId, contact.id, wanted);
  // None of them had a holder above; one taken since is skipped by addIdentity.
  for (const other of others) await addIdentity(tx, workspaceId, contact.id, other);
  return { contactId: contact.id, contactName: contact.name, created: true };
}

async function addIdentity(
  tx: Db,
  workspaceId: string,
  contactId: string,
  identity: NormalisedIdentity,
): Promise<void> {
  const row = await insertIdentity(tx, workspaceId, contactId, identity);
  if (!row) return; // taken meanwhile by another contact: the match stands without it
  await recordEvent(tx, {
    workspaceId,
    name: 'contact.identity_added',
    subjectId: contactId,
    data: { identityId: row.id, channel: row.channel, identifier: row.identifier },
  });
}

async function holderOf(
  tx: Db,
  workspaceId: string,
  contactId: string,
  created: boolean,
): Promise<IdentityContact> {
  const contact = await findContactRef(tx, workspaceId, contactId);
  return { contactId, contactName: contact?.name ?? '', created };
}
