import { signedIn, type Context, type SignedInContext } from '../context.js';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import { recordEvent } from '../events/service.js';
import { redactEvents } from '../events/redact.js';
import { IDENTITIES_PER_CONTACT, MERGE_SOURCES_MAX } from '../limits.js';
import type { ContactDataScope } from '../plugin-host/definition.js';
import { relinkContactTasks } from '../tasks/queries.js';
import { eraseContactData, mergeContactData } from './contact-data.js';
import {
  countIdentitiesOfAll,
  deleteContactRows,
  lockContacts,
  moveIdentities,
} from './erase-queries.js';
import { contactLoaders } from './loaders.js';
import { bumpContactCount, findContact, touchContact } from './queries.js';
import type { Contact } from './tables.js';

/** What `deleteContact` answers. */
export interface ContactErasure {
  /** The erased contact's id. */
  id: string;
  /** The tasks that named it and now name no contact. */
  unlinkedTaskIds: string[];
}

/** What `mergeContacts` answers. */
export interface ContactMerge {
  contact: Contact;
  /** The sources, erased, in the order given. */
  mergedIds: string[];
}

function scopeOf(ctx: SignedInContext, tx: Db): ContactDataScope {
  return { db: tx, workspaceId: ctx.workspaceId, config: ctx.config };
}

/**
 * Erases locked contacts inside `tx` (docs/contacts.md): every plugin's rows through its
 * `contactData.erase`, the tasks' links, what stored events say of them, the contacts and
 * their identities; one `contact.deleted` each (its id, and `mergedInto` for a merge's
 * source). Answers the unlinked tasks.
 */
async function eraseLocked(
  tx: Db,
  ctx: SignedInContext,
  ids: readonly string[],
  mergedInto: string | null,
): Promise<string[]> {
  const { workspaceId, actor } = ctx;
  await eraseContactData(scopeOf(ctx, tx), ids);
  const unlinked = await relinkContactTasks(tx, workspaceId, ids, null);
  await redactEvents(tx, workspaceId, ids);
  const deleted = await deleteContactRows(tx, workspaceId, ids);
  await bumpContactCount(tx, workspaceId, -deleted);
  for (const id of ids) {
    await recordEvent(tx, {
      workspaceId,
      name: 'contact.deleted',
      subjectId: id,
      actorUserId: actor.userId,
      data: mergedInto ? { mergedInto } : {},
    });
  }
  return unlinked;
}

/** Erases a contact and everything naming it, in one transaction. */
export async function deleteContact(ctx: Context, id: string): Promise<ContactErasure> {
  const signed = signedIn(ctx);
  const unlinkedTaskIds = await ctx.database.db.transaction(async (tx) => {
    const locked = await lockContacts(tx, signed.workspaceId, [id]);
    if (locked.length === 0) throw refuse('contact_not_found');
    return eraseLocked(tx, signed, [id], null);
  });
  forget(ctx, [id]);
  return { id, unlinkedTaskIds };
}

/** The sources once each, in the order given; refused when past the cap or naming the target. */
function checkedSources(targetId: string, sourceIds: readonly string[]): string[] {
  const sources = [...new Set(sourceIds)];
  if (sources.length > MERGE_SOURCES_MAX) {
    throw refuse(
      'list_too_long',
      { max: MERGE_SOURCES_MAX },
      { message: `sourceIds may hold at most ${MERGE_SOURCES_MAX} items` },
    );
  }
  if (sources.includes(targetId)) throw refuse('merge_target_in_sources');
  return sources;
}

/**
 * Folds the sources into the target in one transaction (docs/contacts.md): their
 * identities, task links and every plugin's rows (through `contactData.merge`) move to the
 * target, then the sources are erased as `deleteContact` erases. All of them are locked
 * first, in id order, so two merges over the same contacts run one after the other and
 * the second finds what the first left (or contact_not_found).
 */
export async function mergeContacts(
  ctx: Context,
  input: { targetId: string; sourceIds: readonly string[] },
): Promise<ContactMerge> {
  const signed = signedIn(ctx);
  const { workspaceId, actor } = signed;
  const { targetId } = input;
  const sources = checkedSources(targetId, input.sourceIds);
  const contact = await ctx.database.db.transaction(async (tx) => {
    const locked = await lockContacts(tx, workspaceId, [targetId, ...sources]);
    if (locked.length !== sources.length + 1) throw refuse('contact_not_found');
    // Nothing to fold in: the target as it is, nothing written.
    if (sources.length === 0) return (await findContact(tx, workspaceId, targetId)) as Contact;
    const identities = await countIdentitiesOfAll(tx, workspaceId, [targetId, ...sources]);
    if (identities > IDENTITIES_PER_CONTACT) {
      throw refuse('identities_full', { max: IDENTITIES_PER_CONTACT });
    }
    await moveIdentities(tx, workspaceId, targetId, sources);
    await relinkContactTasks(tx, workspaceId, sources, targetId);
    await mergeContactData(scopeOf(signed, tx), { targetId, sourceIds: sources });
    await eraseLocked(tx, signed, sources, targetId);
    const merged = (await touchContact(tx, workspaceId, targetId)) as Contact;
    await recordEvent(tx, {
      workspaceId,
      name: 'contact.merged',
      subjectId: targetId,
      actorUserId: actor.userId,
      data: { sourceIds: sources },
    });
    return merged;
  });
  forget(ctx, [targetId, ...sources]);
  return { contact, mergedIds: sources };
}

/** The request's loaders forget what they read of these contacts before the change. */
function forget(ctx: Context, ids: readonly string[]): void {
  const loaders = ctx.loaders.of(contactLoaders);
  for (const id of ids) {
    loaders.identities.clear(id);
    loaders.contacts.clear(id);
  }
}
