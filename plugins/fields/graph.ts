// The fields plugin's graph (SPEC 4.2, the Fields row): definitions, values and a
// repeater's entries, and Contact.field(name) / Contact.fieldValues.
import type { GraphQLResolveInfo } from 'graphql';
import {
  builder,
  type BuilderTypes,
  ContactObject,
  costs,
  extendCoreType,
  limited,
  STATEMENT,
  TEXT_MAX,
} from '../../src/plugin-sdk/index.js';
import {
  archiveField,
  defineField,
  LABEL_MAX,
  listFields,
  NAME_MAX,
  OPTION_MAX,
  OPTIONS_MAX,
  orderFields,
  reservedNames,
  SUB_FIELDS_MAX,
  DEFINITIONS_MAX,
} from './definitions.js';
import { VALUE_LIMITS } from './kinds.js';
import type { FieldDefinition, SubField } from './tables.js';
import {
  addContactFieldEntry,
  contactField,
  contactFieldValuesOf,
  deleteContactFieldEntry,
  updateContactFieldEntry,
  writeContactFields,
  type EntryResult,
} from './values.js';

/** Managing definitions: a capability the plugin declares; the stock admin holds it. */
export const MANAGE_FIELDS = 'manage_fields';
const manageFields = { access: { scope: 'fields:write', capability: MANAGE_FIELDS } } as const;
const readFields = { access: { scope: 'fields:read' } } as const;
const writeContacts = { access: { scope: 'contacts:write' } } as const;

/** The Contact type's fields in the schema being served (plugins' included). */
function contactFieldNames(info: GraphQLResolveInfo): string[] {
  const contact = info.schema.getType('Contact');
  return contact && 'getFields' in contact ? Object.keys(contact.getFields()) : [];
}

const nameArg = { maxLength: NAME_MAX };
/** A values object holds long texts; every string in it is held to the longest kind's cap. */
const valuesLimits = limited({ maxLength: VALUE_LIMITS.longText });

const FieldSubFieldObject = builder.objectRef<SubField>('FieldSubField').implement({
  description: "One column of a repeater's entries.",
  fields: (t) => ({
    name: t.exposeString('name'),
    label: t.exposeString('label'),
    kind: t.exposeString('kind'),
    options: t.exposeStringList('options', { nullable: true }),
    currency: t.exposeString('currency', { nullable: true }),
  }),
});

export const FieldDefinitionObject = builder
  .objectRef<FieldDefinition>('FieldDefinition')
  .implement({
    description: "A custom field of the workspace's contacts (docs/fields.md).",
    fields: (t) => ({
      id: t.expose('id', { type: 'UUID' }),
      name: t.exposeString('name', { description: 'camelCase; what values are written under.' }),
      label: t.exposeString('label'),
      kind: t.exposeString('kind', {
        description:
          'text, long_text, number, boolean, date, date_time, select, multi_select, url, ' +
          'email, phone, currency or repeater.',
      }),
      options: t.stringList({
        nullable: true,
        description: 'The choices of a select or multi_select field.',
        resolve: (definition) => definition.settings.options ?? null,
      }),
      currency: t.string({
        nullable: true,
        description: "A currency field's ISO 4217 code.",
        resolve: (definition) => definition.settings.currency ?? null,
      }),
      subFields: t.field({
        type: [FieldSubFieldObject],
        nullable: true,
        description: "A repeater's sub fields.",
        resolve: (definition) => definition.settings.subFields ?? null,
      }),
      position: t.exposeInt('position'),
      archived: t.boolean({ resolve: (definition) => definition.archivedAt !== null }),
      archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
    }),
  });

const FieldEntryObject = builder.objectRef<EntryResult>('FieldEntry').implement({
  description: "One entry of a contact's repeater field.",
  fields: (t) => ({
    id: t.field({ type: 'UUID', resolve: (result) => result.entry.id }),
    contactId: t.expose('contactId', { type: 'UUID' }),
    field: t.exposeString('field'),
    values: t.field({
      type: 'JSON',
      description: 'The entry as `Contact.field` reads it: its `id` and its non-blank cells.',
      resolve: (result) => result.entry,
    }),
  }),
});

type InputFieldBuilder = PothosSchemaTypes.InputFieldBuilder<BuilderTypes, 'InputObject'>;

/** What a definition and a repeater's sub field both take: name, label, kind and settings. */
const fieldShape = (t: InputFieldBuilder) => ({
  name: t.string({ extensions: limited({ maxLength: NAME_MAX }) }),
  label: t.string({
    extensions: limited({ maxLength: LABEL_MAX, tooLong: 'field_label_too_long' }),
  }),
  kind: t.string({ extensions: limited({ maxLength: TEXT_MAX.word }) }),
  options: t.stringList({
    required: false,
    extensions: limited({ maxItems: OPTIONS_MAX, maxLength: OPTION_MAX }),
  }),
  currency: t.string({ required: false, extensions: limited({ maxLength: TEXT_MAX.word }) }),
});

const FieldSubFieldInput = builder.inputType('FieldSubFieldInput', { fields: fieldShape });

const FieldDefineInput = builder.inputType('FieldDefineInput', {
  fields: (t) => ({
    ...fieldShape(t),
    subFields: t.field({
      type: [FieldSubFieldInput],
      required: false,
      extensions: limited({ maxItems: SUB_FIELDS_MAX }),
    }),
  }),
});

builder.queryFields((t) => ({
  fields: t.field({
    type: [FieldDefinitionObject],
    description: "The workspace's custom fields in their order; archived ones on request.",
    authScopes: readFields,
    args: { includeArchived: t.arg.boolean({ required: false }) },
    // Answered from the process's workspace cache; at most DEFINITIONS_MAX live rows.
    extensions: costs({ cost: STATEMENT }),
    resolve: (_root, args, ctx) => listFields(ctx, args.includeArchived ?? false),
  }),
  reservedFieldNames: t.stringList({
    description: "Names no custom field may take: the contact's own fields and look-alikes.",
    authScopes: readFields,
    extensions: costs({ cost: 0 }),
    resolve: (_root, _args, _ctx, info) => reservedNames(contactFieldNames(info)),
  }),
}));

const entryArgs = (t: Parameters<Parameters<typeof builder.mutationFields>[0]>[0]) => ({
  contactId: t.arg({ type: 'UUID', required: true }),
  field: t.arg.string({ required: true, extensions: limited(nameArg) }),
});

builder.mutationFields((t) => ({
  defineField: t.field({
    type: FieldDefinitionObject,
    description: `Adds a custom field (at most ${DEFINITIONS_MAX} live), or takes an archived one back.`,
    authScopes: manageFields,
    args: { input: t.arg({ type: FieldDefineInput, required: true }) },
    resolve: (_root, args, ctx, info) =>
      defineField(ctx, args.input, new Set(reservedNames(contactFieldNames(info)))),
  }),
  archiveField: t.field({
    type: FieldDefinitionObject,
    description: 'Archives a live field; its values stay and return when it is defined again.',
    authScopes: manageFields,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => archiveField(ctx, args.id),
  }),
  orderFields: t.field({
    type: [FieldDefinitionObject],
    description: 'Orders the live fields: every live id, each once, in the new order.',
    authScopes: manageFields,
    args: {
      ids: t.arg({
        type: ['UUID'],
        required: true,
        extensions: limited({ maxItems: DEFINITIONS_MAX }),
      }),
    },
    resolve: (_root, args, ctx) => orderFields(ctx, args.ids),
  }),
  writeContactFields: t.field({
    type: ContactObject,
    description:
      "Writes a contact's custom field values: an object of names to values; null clears one.",
    authScopes: writeContacts,
    args: {
      contactId: t.arg({ type: 'UUID', required: true }),
      values: t.arg({ type: 'JSON', required: true, extensions: valuesLimits }),
    },
    resolve: (_root, args, ctx) => writeContactFields(ctx, args.contactId, args.values),
  }),
  addContactFieldEntry: t.field({
    type: FieldEntryObject,
    description: "Adds an entry to a contact's repeater field.",
    authScopes: writeContacts,
    args: {
      ...entryArgs(t),
      values: t.arg({ type: 'JSON', required: true, extensions: valuesLimits }),
    },
    resolve: (_root, args, ctx) =>
      addContactFieldEntry(ctx, {
        contactId: args.contactId,
        field: args.field,
        values: args.values,
      }),
  }),
  updateContactFieldEntry: t.field({
    type: FieldEntryObject,
    description: 'Changes the named cells of an entry (null clears one); the others stay.',
    authScopes: writeContacts,
    args: {
      ...entryArgs(t),
      entryId: t.arg({ type: 'UUID', required: true }),
      values: t.arg({ type: 'JSON', required: true, extensions: valuesLimits }),
    },
    resolve: (_root, args, ctx) => updateContactFieldEntry(ctx, { ...args, values: args.values }),
  }),
  deleteContactFieldEntry: t.field({
    type: 'UUID',
    description: "Deletes an entry of a contact's repeater field; answers its id.",
    authScopes: writeContacts,
    args: { ...entryArgs(t), entryId: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => deleteContactFieldEntry(ctx, args),
  }),
}));

// Fields on the core Contact: reached through a contact, they need no scope of their own.
// A page's values are one read and its repeater entries another (loaders): the rows are
// the cost.
extendCoreType(ContactObject, 'field', (t) =>
  t.field({
    type: 'JSON',
    nullable: true,
    description: "One custom field's value (a repeater's: its entries), or null when it has none.",
    args: { name: t.arg.string({ required: true, extensions: limited(nameArg) }) },
    extensions: costs({ cost: 0 }),
    resolve: (contact, args, ctx) => contactField(ctx, contact.id, args.name),
  }),
);

extendCoreType(ContactObject, 'fieldValues', (t) =>
  t.field({
    type: 'JSON',
    description: "Every live custom field holding a value, by name, in the fields' order.",
    extensions: costs({ cost: 0 }),
    resolve: (contact, _args, ctx) => contactFieldValuesOf(ctx, contact.id),
  }),
);
