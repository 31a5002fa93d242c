import type { GraphQLResolveInfo } from 'graphql';
import { builder } from '../graph/builder.js';
import { connectionOf } from '../graph/connection.js';
import { costs } from '../graph/complexity.js';
import {
  CHANNEL_FILTER,
  DUPLICATES,
  FILTER_COUNT,
  ERASE,
  STATEMENT,
  WRITE,
  filtered,
  searchCost,
} from '../graph/costs.js';
import { limited } from '../graph/input-limits.js';
import { readAheadsSelected } from '../graph/read-ahead.js';
import { fieldsAskedOf, selects } from '../graph/selection.js';
import {
  DUPLICATES_DEFAULT,
  DUPLICATES_MAX,
  IDENTITIES_PER_REQUEST,
  MERGE_SOURCES_MAX,
  TEXT_MAX,
} from '../limits.js';
import { ERASE_RECORDS } from '../auth/access.js';
import { deleteContact, mergeContacts, type ContactErasure, type ContactMerge } from './erase.js';
import { contactFilters, usedFilters } from './filters.js';
import { contactLoaders } from './loaders.js';
import {
  addContactIdentity,
  contactDuplicates,
  contactPage,
  createContact,
  deleteContactIdentity,
  getContact,
  listContacts,
  renameContact,
  type ContactPage,
  type IdentityResult,
} from './service.js';
import {
  BRIEF_IDENTITY_FIELDS,
  NAME_SIMILARITY,
  type DuplicateRow,
  type IdentityFields,
  type IdentityView,
} from './queries.js';
import type { Contact } from './tables.js';
import type { Context } from '../context.js';

/**
 * A contact (SPEC 2.3). Plugins and other domains add fields to it (tasks, notes,
 * custom fields); a plugin returning a contact gives `id` and `name` only, and the core
 * resolves the rest from the id.
 */
export const ContactObject = builder.objectRef<Contact>('Contact');

/**
 * What a read of contacts reads of their identities: nothing unless the field selects
 * them at `path`; only channel and identifier when nothing in the operation asks any
 * identity for more (so every identity the request resolves has what it is asked).
 */
function identityFieldsTo(info: GraphQLResolveInfo, ...path: string[]): IdentityFields | null {
  if (!selects(info, ...path)) return null;
  const asked = fieldsAskedOf(info, 'ContactIdentity');
  const brief = [...asked].every(
    (field) => BRIEF_IDENTITY_FIELDS.has(field) || field === '__typename',
  );
  return brief ? 'brief' : 'all';
}

/** The stored row behind a parent that may carry only `id` (a plugin's contact). */
async function stored(contact: Contact, ctx: Context): Promise<Contact> {
  if (contact.createdAt !== undefined && contact.updatedAt !== undefined) return contact;
  return (await ctx.loaders.of(contactLoaders).contacts.load(contact.id)) ?? contact;
}

export const ContactIdentityObject = builder.objectRef<IdentityView>('ContactIdentity').implement({
  description: "One of a contact's channel identities: an address, a number, a handle.",
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    channel: t.exposeString('channel'),
    identifier: t.exposeString('identifier', { description: 'As written (trimmed).' }),
    displayName: t.exposeString('displayName', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

ContactObject.implement({
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    name: t.exposeString('name'),
    createdAt: t.field({
      type: 'DateTime',
      resolve: async (contact, _args, ctx) => (await stored(contact, ctx)).createdAt,
    }),
    updatedAt: t.field({
      type: 'DateTime',
      description: 'Last rename or identity change.',
      resolve: async (contact, _args, ctx) => (await stored(contact, ctx)).updatedAt,
    }),
    identities: t.field({
      type: [ContactIdentityObject],
      description: 'Oldest first. The identities of every contact on a page load in one read.',
      // A contact read with its identities (a page, `contact(id)`) carries them; its loader
      // holds the same (primed), so answering them here saves a promise per contact.
      resolve: (contact: Contact & { identities?: IdentityView[] }, _args, ctx) =>
        contact.identities ?? ctx.loaders.of(contactLoaders).identities.load(contact.id),
    }),
  }),
});

const ContactConnection = connectionOf('Contact', ContactObject);

const ContactPageObject = builder.objectRef<ContactPage>('ContactPage').implement({
  description:
    'An offset page: the next starts at offset + limit; the last where that reaches total.',
  fields: (t) => ({
    // Exposed (no resolver): graphql-jit reads them inline (src/graph/connection.ts).
    items: t.expose('items', { type: [ContactObject] }),
    total: t.exposeInt('total', {
      description: 'Every contact matching the filter.',
      // Unfiltered it is the workspace's stored count; filtered, a count of every match.
      extensions: costs({
        cost: (_args, page) =>
          filtered(page) || usedFilters(page).length > 0 ? FILTER_COUNT : STATEMENT,
      }),
    }),
    limit: t.exposeInt('limit', { description: 'The page size served.' }),
  }),
});

const ContactOrderEnum = builder.enumType('ContactOrder', {
  values: { NAME: { description: 'Name, A to Z for ASC.' }, CREATED_AT: {} } as const,
});
const SortOrderEnum = builder.enumType('SortOrder', { values: ['ASC', 'DESC'] as const });

const IdentityInput = builder.inputType('IdentityInput', {
  fields: (t) => ({
    channel: t.string({
      description: '`email` or `phone`, or a writable plugin channel.',
      extensions: limited({ maxLength: TEXT_MAX.word }),
    }),
    identifier: t.string({ extensions: limited({ maxLength: TEXT_MAX.identifier }) }),
    displayName: t.string({
      required: false,
      extensions: limited({ maxLength: TEXT_MAX.displayName }),
    }),
  }),
});

const ContactIdentityPayload = builder
  .objectRef<IdentityResult>('ContactIdentityPayload')
  .implement({
    description: 'The identity written or removed, and its contact after the change.',
    fields: (t) => ({
      identity: t.field({ type: ContactIdentityObject, resolve: (p) => p.identity }),
      contact: t.field({ type: ContactObject, resolve: (p) => p.contact }),
    }),
  });

const ContactErasureObject = builder.objectRef<ContactErasure>('ContactErasure').implement({
  description: 'What deleteContact erased (docs/contacts.md).',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID', description: 'The erased contact’s id.' }),
    unlinkedTaskIds: t.field({
      type: ['UUID'],
      description: 'The tasks that named the contact: they stay, with contactId null.',
      resolve: (erasure) => erasure.unlinkedTaskIds,
    }),
  }),
});

const ContactMergeObject = builder.objectRef<ContactMerge>('ContactMerge').implement({
  description: 'The target after mergeContacts, and the sources folded into it and erased.',
  fields: (t) => ({
    contact: t.field({ type: ContactObject, resolve: (merge) => merge.contact }),
    mergedIds: t.field({
      type: ['UUID'],
      description: 'The sources, each once, in the order given; they no longer exist.',
      resolve: (merge) => merge.mergedIds,
    }),
  }),
});

const readContacts = { access: { scope: 'contacts:read' } } as const;
/** Erasing or merging contacts: the token's contacts:write and the role's erase_records. */
const eraseContacts = {
  access: { scope: 'contacts:write', capability: ERASE_RECORDS },
} as const;

/** How many identities a createContact input carries (for its cost). */
function identitiesIn(input: unknown): number {
  const identities = (input as { identities?: unknown } | null)?.identities;
  return Array.isArray(identities) ? identities.length : 0;
}
const writeContacts = { access: { scope: 'contacts:write' } } as const;

builder.queryFields((t) => ({
  contact: t.field({
    type: ContactObject,
    authScopes: readContacts,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx, info) =>
      getContact(ctx, args.id, {
        identities: identityFieldsTo(info, 'identities'),
        timestamps: selects(info, 'createdAt') || selects(info, 'updatedAt'),
        readAheads: readAheadsSelected(info, ctx),
      }),
  }),
  contacts: t.field({
    type: ContactConnection,
    description:
      'Contacts by name A to Z, then id. `q` matches a name fragment, an identity display ' +
      'name fragment or (3+ digits) the digits of an identifier.',
    authScopes: readContacts,
    args: {
      q: t.arg.string({ required: false, extensions: limited({ maxLength: TEXT_MAX.search }) }),
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
    },
    extensions: costs({ cost: (args) => STATEMENT + searchCost(args) }),
    resolve: (_root, args, ctx) => listContacts(ctx, args),
  }),
  contactPage: t.field({
    type: ContactPageObject,
    description:
      'An offset page. `q` as for `contacts`; `channels` keeps contacts with an identity on ' +
      'any named channel (an empty list narrows nothing).',
    authScopes: readContacts,
    args: {
      q: t.arg.string({ required: false, extensions: limited({ maxLength: TEXT_MAX.search }) }),
      channels: t.arg.stringList({
        required: false,
        extensions: limited({ maxLength: TEXT_MAX.word, maxItems: 20 }),
      }),
      orderBy: t.arg({ type: ContactOrderEnum, required: false, defaultValue: 'NAME' }),
      order: t.arg({ type: SortOrderEnum, required: false, defaultValue: 'ASC' }),
      limit: t.arg.int({ required: false }),
      offset: t.arg.int({ required: false, description: 'Zero or more. @default 0' }),
      // Plugins' filters (src/contacts/filters.ts): the fields plugin's `field`.
      ...Object.fromEntries(
        contactFilters().map((filter) => [
          filter.argument,
          t.arg({ type: filter.type, required: false, description: filter.description }),
        ]),
      ),
    },
    extensions: costs({
      cost: (args) =>
        STATEMENT +
        searchCost(args) +
        (Array.isArray(args.channels) && args.channels.length > 0 ? CHANNEL_FILTER : 0) +
        usedFilters(args).reduce((sum, { filter, value }) => sum + filter.cost(value), 0),
    }),
    resolve: (_root, args, ctx, info) =>
      contactPage(ctx, {
        ...args,
        withTotal: selects(info, 'total'),
        identities: identityFieldsTo(info, 'items', 'identities'),
        timestamps: selects(info, 'items', 'createdAt') || selects(info, 'items', 'updatedAt'),
      }),
  }),
}));

const DuplicateSignalEnum = builder.enumType('DuplicateSignal', {
  description: 'Why a contact looks like the same person as another.',
  values: {
    IDENTIFIER: {
      description:
        'Both hold the same address on any channel, compared lower-cased with a `+tag` dropped.',
    },
    PHONE_DIGITS: {
      description:
        'Both hold a number (on any channel) ending in the same 9 digits, however written.',
    },
    NAME: {
      description: `Their lower-cased names are at least ${NAME_SIMILARITY} alike (trigram similarity).`,
    },
  } as const,
});

const ContactDuplicateObject = builder.objectRef<DuplicateRow>('ContactDuplicate').implement({
  description: 'A contact that looks like the same person as the one asked about, and why.',
  fields: (t) => ({
    contact: t.field({ type: ContactObject, resolve: (row) => row.contact }),
    score: t.float({
      description:
        '0 to 1, higher is likelier: 1 − (1 − 0.9·IDENTIFIER)(1 − 0.8·PHONE_DIGITS)' +
        `(1 − 0.7·nameSimilarity when NAME), each signal 1 when present, else 0.`,
      resolve: (row) => row.score,
    }),
    signals: t.field({
      type: [DuplicateSignalEnum],
      description: 'The signals present, strongest first.',
      resolve: (row) => [
        ...(row.address ? (['IDENTIFIER'] as const) : []),
        ...(row.phone ? (['PHONE_DIGITS'] as const) : []),
        ...(row.similarity >= NAME_SIMILARITY ? (['NAME'] as const) : []),
      ],
    }),
    nameSimilarity: t.float({
      description: 'Trigram similarity of the two lower-cased names, 0 to 1, signal or not.',
      resolve: (row) => row.similarity,
    }),
  }),
});

builder.queryFields((t) => ({
  contactDuplicates: t.field({
    type: [ContactDuplicateObject],
    description:
      'The contacts that look like the same person as contact `id`, best first (score, ' +
      'then name A to Z, then id); never the contact itself. A contact is a candidate when ' +
      "it shares an address or a number's last 9 digits with it on any channel, or its " +
      `name is at least ${NAME_SIMILARITY} alike; docs/contacts.md has the details. ` +
      `\`first\`: 1 to ${DUPLICATES_MAX}.`,
    authScopes: readContacts,
    args: {
      id: t.arg({ type: 'UUID', required: true }),
      first: t.arg.int({ required: false, defaultValue: DUPLICATES_DEFAULT }),
    },
    extensions: costs({ cost: DUPLICATES }),
    resolve: (_root, args, ctx) => contactDuplicates(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  createContact: t.field({
    type: ContactObject,
    description: 'Creates a contact with its identities; nothing is written if one is refused.',
    authScopes: writeContacts,
    args: {
      input: t.arg({
        type: builder.inputType('CreateContactInput', {
          fields: (f) => ({
            name: f.string({ extensions: limited({ maxLength: TEXT_MAX.name }) }),
            identities: f.field({
              type: [IdentityInput],
              required: false,
              extensions: limited({ maxItems: IDENTITIES_PER_REQUEST }),
            }),
          }),
        }),
        required: true,
      }),
    },
    // Each identity is a write of its own (the row and its event).
    extensions: costs({
      cost: (args) => WRITE * (1 + identitiesIn(args.input)),
    }),
    resolve: (_root, args, ctx) => createContact(ctx, args.input),
  }),
  renameContact: t.field({
    type: ContactObject,
    authScopes: writeContacts,
    args: {
      id: t.arg({ type: 'UUID', required: true }),
      name: t.arg.string({ required: true, extensions: limited({ maxLength: TEXT_MAX.name }) }),
    },
    resolve: (_root, args, ctx) => renameContact(ctx, args),
  }),
  addContactIdentity: t.field({
    type: ContactIdentityPayload,
    description:
      'Adds an identity. Held by another contact: identity_taken with ownerContactId; ' +
      'already on this contact: answers the stored identity.',
    authScopes: writeContacts,
    args: {
      contactId: t.arg({ type: 'UUID', required: true }),
      identity: t.arg({ type: IdentityInput, required: true }),
    },
    resolve: (_root, args, ctx) => addContactIdentity(ctx, args),
  }),
  deleteContactIdentity: t.field({
    type: ContactIdentityPayload,
    authScopes: writeContacts,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => deleteContactIdentity(ctx, args),
  }),
  deleteContact: t.field({
    type: ContactErasureObject,
    description:
      'Erases a contact: its identities, every plugin’s data about it (custom field values ' +
      'and entries, conversations with their messages and media, import row links) and what ' +
      'stored events said of it; its tasks stay with contactId null. Emits contact.deleted. ' +
      'Needs erase_records (docs/contacts.md).',
    authScopes: eraseContacts,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    extensions: costs({ cost: ERASE }),
    resolve: (_root, args, ctx) => deleteContact(ctx, args.id),
  }),
  mergeContacts: t.field({
    type: ContactMergeObject,
    description:
      'Folds the sources into the target in one transaction: identities, task links, field ' +
      'values (the target’s wins; repeater entries appended), conversations and import row ' +
      `links move to the target, then the sources are erased as by deleteContact. At most ${MERGE_SOURCES_MAX} ` +
      'sources. Emits contact.merged and a contact.deleted per source. Needs erase_records.',
    authScopes: eraseContacts,
    args: {
      targetId: t.arg({ type: 'UUID', required: true }),
      sourceIds: t.arg({
        type: ['UUID'],
        required: true,
        extensions: limited({ maxItems: MERGE_SOURCES_MAX }),
      }),
    },
    // The target's write and one erasure per source.
    extensions: costs({
      cost: (args) => ERASE * (1 + (Array.isArray(args.sourceIds) ? args.sourceIds.length : 0)),
    }),
    resolve: (_root, args, ctx) => mergeContacts(ctx, args),
  }),
}));
