import { signedIn, type Context } from '../context.js';
import type { ReadAheadChoice } from '../graph/read-ahead.js';
import type { Db } from '../db/client.js';
import { refuse } from '../errors.js';
import {
  checkText,
  DUPLICATES_DEFAULT,
  DUPLICATES_MAX,
  IDENTITIES_PER_CONTACT,
  IDENTITIES_PER_REQUEST,
  TEXT_MAX,
} from '../limits.js';
import { recordEvent } from '../events/service.js';
import {
  channelName,
  normaliseIdentity,
  type IdentityInput,
  type NormalisedIdentity,
} from './channels.js';
import { contactLoaders } from './loaders.js';
import { usedFilters } from './filters.js';
import {
  bumpContactCount,
  countIdentitiesOf,
  deleteIdentity,
  findContact,
  findContactReading,
  findIdentityByKey,
  insertContact,
  insertIdentity,
  selectContactPage,
  selectDuplicates,
  type DuplicateRow,
  type IdentityFields,
  selectContactsByName,
  touchContact,
  type ContactFilter,
  type ContactOrder,
  type SortOrder,
} from './queries.js';
import type { Contact, ContactIdentity } from './tables.js';
import { decodeCursor, encodeCursor, pageSize, toPage, type Page } from '../paging/index.js';

export interface ContactPage {
  items: Contact[];
  total: number;
  limit: number;
}

export interface IdentityResult {
  identity: ContactIdentity;
  contact: Contact;
}

function contactName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw refuse('contact_name_required');
  return checkText(trimmed, 'name', TEXT_MAX.name);
}

/** One (channel, key) once: a repeated identity in the same input is written once. */
function distinctIdentities(inputs: readonly IdentityInput[]): NormalisedIdentity[] {
  if (inputs.length > IDENTITIES_PER_REQUEST) {
    throw refuse(
      'list_too_long',
      { max: IDENTITIES_PER_REQUEST },
      {
        message: `identities may hold at most ${IDENTITIES_PER_REQUEST} items`,
      },
    );
  }
  const seen = new Map<string, NormalisedIdentity>();
  for (const identity of inputs.map(normaliseIdentity)) {
    const key = `${identity.channel}\u0000${identity.identifierKey}`;
    if (!seen.has(key)) seen.set(key, identity);
  }
  return [...seen.values()];
}

function isIdentityKeyViolation(error: unknown): boolean {
  const e = error as { code?: string; constraint_name?: string; cause?: unknown } | null;
  if (e?.code === '23505' && e.constraint_name === 'contact_identities_key') return true;
  return e?.cause !== undefined && e.cause !== error && isIdentityKeyViolation(e.cause);
}

/**
 * Runs a write that adds identities. ON CONFLICT already turns a held identity into
 * identity_taken; should the unique index still fire (a race the insert did not see),
 * the transaction has rolled back and the owner is looked up afresh.
 */
async function withIdentityRefusal<T>(
  ctx: Context,
  identities: readonly NormalisedIdentity[],
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!isIdentityKeyViolation(error)) throw error;
    const db = ctx.database.db;
    for (const identity of identities) {
      const held = await findIdentityByKey(
        db,
        signedIn(ctx).workspaceId,
        identity.channel,
        identity.identifierKey,
      );
      if (held) throw refuse('identity_taken', { ownerContactId: held.contactId });
    }
    throw error;
  }
}

/** Adds an identity to a contact inside `tx`, or refuses with its holder. */
async function addIdentityIn(
  tx: Db,
  ctx: Context,
  contactId: string,
  identity: NormalisedIdentity,
): Promise<ContactIdentity> {
  const { workspaceId, actor } = signedIn(ctx);
  const row = await insertIdentity(tx, workspaceId, contactId, identity);
  if (!row) {
    const held = await findIdentityByKey(tx, workspaceId, identity.channel, identity.identifierKey);
    if (held?.contactId === contactId) return held;
    throw refuse('identity_taken', { ownerContactId: held?.contactId ?? '' });
  }
  await recordEvent(tx, {
    workspaceId,
    name: 'contact.identity_added',
    subjectId: contactId,
    actorUserId: actor.userId,
    data: { identityId: row.id, channel: row.channel, identifier: row.identifier },
  });
  return row;
}

export async function createContact(
  ctx: Context,
  input: { name: string; identities?: readonly IdentityInput[] | null },
): Promise<Contact> {
  const { workspaceId, actor } = signedIn(ctx);
  const name = contactName(input.name);
  const identities = distinctIdentities(input.identities ?? []);
  return withIdentityRefusal(ctx, identities, () =>
    ctx.database.db.transaction(async (tx) => {
      const contact = await insertContact(tx, workspaceId, name);
      await bumpContactCount(tx, workspaceId, 1);
      await recordEvent(tx, {
        workspaceId,
        name: 'contact.created',
        subjectId: contact.id,
        actorUserId: actor.userId,
        data: { name: contact.name },
      });
      for (const identity of identities) await addIdentityIn(tx, ctx, contact.id, identity);
      return contact;
    }),
  );
}

export async function renameContact(
  ctx: Context,
  input: { id: string; name: string },
): Promise<Contact> {
  const { workspaceId, actor } = signedIn(ctx);
  const name = contactName(input.name);
  return ctx.database.db.transaction(async (tx) => {
    const before = await findContact(tx, workspaceId, input.id);
    if (!before) throw refuse('contact_not_found');
    const contact = (await touchContact(tx, workspaceId, input.id, name)) as Contact;
    await recordEvent(tx, {
      workspaceId,
      name: 'contact.renamed',
      subjectId: contact.id,
      actorUserId: actor.userId,
      data: { from: before.name, to: contact.name },
    });
    return contact;
  });
}

export async function addContactIdentity(
  ctx: Context,
  input: { contactId: string; identity: IdentityInput },
): Promise<IdentityResult> {
  const { workspaceId } = signedIn(ctx);
  const identity = normaliseIdentity(input.identity);
  const result = await withIdentityRefusal(ctx, [identity], () =>
    ctx.database.db.transaction(async (tx) => {
      // Touching the contact first locks it and tells whether it exists here.
      const contact = await touchContact(tx, workspaceId, input.contactId);
      if (!contact) throw refuse('contact_not_found');
      const added = await addIdentityIn(tx, ctx, contact.id, identity);
      // Counted under the contact's row lock, so concurrent adds stop exactly at the cap;
      // an identity the contact already held changes no count. (createContact writes at
      // most IDENTITIES_PER_REQUEST, below the cap.)
      if ((await countIdentitiesOf(tx, workspaceId, contact.id)) > IDENTITIES_PER_CONTACT) {
        throw refuse('identities_full', { max: IDENTITIES_PER_CONTACT });
      }
      return { identity: added, contact };
    }),
  );
  ctx.loaders.of(contactLoaders).identities.clear(result.contact.id);
  return result;
}

export async function deleteContactIdentity(
  ctx: Context,
  input: { id: string },
): Promise<IdentityResult> {
  const { workspaceId, actor } = signedIn(ctx);
  const result = await ctx.database.db.transaction(async (tx) => {
    const identity = await deleteIdentity(tx, workspaceId, input.id);
    if (!identity) throw refuse('identity_not_found');
    const contact = (await touchContact(tx, workspaceId, identity.contactId)) as Contact;
    await recordEvent(tx, {
      workspaceId,
      name: 'contact.identity_removed',
      subjectId: contact.id,
      actorUserId: actor.userId,
      data: { identityId: identity.id, channel: identity.channel, identifier: identity.identifier },
    });
    return { identity, contact };
  });
  ctx.loaders.of(contactLoaders).identities.clear(result.contact.id);
  return result;
}

/**
 * A contact by id. `identities` (the operation asks for them) reads its identities in
 * the same statement and hands them to the request's identities loader; each of
 * `readAheads` (other domains' fields the operation selects) reads its column there too
 * and hands it to its own loader.
 */
export async function getContact(
  ctx: Context,
  id: string,
  options: {
    identities?: IdentityFields | null;
    /** Read its created and updated times (the operation asks one). @default true */
    timestamps?: boolean;
    readAheads?: readonly ReadAheadChoice[];
  } = {},
): Promise<Contact> {
  const { workspaceId } = signedIn(ctx);
  const db = ctx.database.db;
  const readAheads = options.readAheads ?? [];
  const contact = await findContactReading(db, workspaceId, id, {
    identities: options.identities ?? null,
    timestamps: options.timestamps !== false,
    columns: readAheads.map(({ readAhead }) => readAhead),
    values: Object.assign({}, ...readAheads.map(({ values }) => values)) as Record<string, unknown>,
  });
  if (!contact) throw refuse('contact_not_found');
  // It carries the identities and read-aheads read with it, which their fields answer; no
  // loader is made or primed for a read that needs none.
  return contact;
}

function filterOf(args: { q?: string | null; channels?: readonly string[] | null }): ContactFilter {
  return { q: args.q, channels: args.channels?.map(channelName).filter(Boolean) };
}

/** Contacts by name A–Z, then id: a keyset walk, stable while contacts come and go. */
export async function listContacts(
  ctx: Context,
  args: { q?: string | null; first?: number | null; after?: string | null },
): Promise<Page<Contact>> {
  const size = pageSize(args.first, ctx.config);
  let after = null;
  if (args.after) {
    const [sortName, id] = decodeCursor('contacts', args.after, 2);
    if (typeof sortName !== 'string' || typeof id !== 'string') throw refuse('cursor_malformed');
    after = { sortName, id };
  }
  const rows = await selectContactsByName(
    ctx.database.db,
    signedIn(ctx).workspaceId,
    filterOf(args),
    after,
    size + 1,
  );
  return toPage(rows, size, (row) => encodeCursor('contacts', [row.sortName, row.id]));
}

/**
 * An offset page and the number of all matches. Unfiltered, the total is the stored
 * per-workspace count; a search counts its matches in the page's statement, another
 * filter in a statement run beside the page.
 */
export async function contactPage(
  ctx: Context,
  args: {
    q?: string | null;
    channels?: readonly string[] | null;
    orderBy?: ContactOrder | null;
    order?: SortOrder | null;
    limit?: number | null;
    offset?: number | null;
    /** Count the matches too. @default true */
    withTotal?: boolean;
    /** Read the contacts' identities in the page's statement (the operation asks for them). */
    identities?: IdentityFields | null;
    /** Read the contacts' created and updated times (the operation asks for them). @default true */
    timestamps?: boolean;
    /** Plugins' filter arguments, by name (src/contacts/filters.ts). */
    [argument: string]: unknown;
  },
): Promise<ContactPage> {
  const limit = pageSize(args.limit, ctx.config, 'limit');
  const offset = args.offset ?? 0;
  if (offset < 0) throw refuse('offset_negative');
  const db = ctx.database.db;
  const signed = signedIn(ctx);
  const { workspaceId } = signed;
  const conditions = await Promise.all(
    usedFilters(args).map(({ filter, value }) => filter.condition(signed, value)),
  );
  const filter = { ...filterOf(args), conditions };
  const page = { orderBy: args.orderBy ?? 'NAME', order: args.order ?? 'ASC', limit, offset };
  const read = await selectContactPage(db, workspaceId, filter, page, {
    identities: args.identities ?? null,
    timestamps: args.timestamps !== false,
    total: args.withTotal !== false,
  });
  // Each item carries the identities read with it, which `Contact.identities` answers;
  // the loader is not primed with them (a promise per contact for a page of 50).
  return { items: read.items, total: read.total ?? 0, limit };
}

/**
 * The contacts that look like the same person as contact `id`, best first: at most
 * `first` (1 to DUPLICATES_MAX, DUPLICATES_DEFAULT when left out). One statement
 * (src/contacts/queries.ts `selectDuplicates`); docs/contacts.md gives the score.
 */
export async function contactDuplicates(
  ctx: Context,
  args: { id: string; first?: number | null },
): Promise<DuplicateRow[]> {
  const first = args.first ?? DUPLICATES_DEFAULT;
  if (!Number.isInteger(first) || first < 1 || first > DUPLICATES_MAX) {
    throw refuse('first_out_of_range', { min: 1, max: DUPLICATES_MAX });
  }
  const rows = await selectDuplicates(ctx.database.db, signedIn(ctx).workspaceId, args.id, first);
  if (!rows) throw refuse('contact_not_found');
  return rows;
}
