// contactPage's `field` condition (beyond SPEC 2.7, docs/fields.md): contacts whose value of
// one live field equals a value (any kind but the repeater; a multi_select holding an
// option) or, for the text kinds, contains a fragment. Served by the values table's
// indexes: the value's hash within its field, and trigrams of its text.
import { sql } from 'drizzle-orm';
import {
  builder,
  contacts,
  INDEXED_FILTER,
  limited,
  refuse,
  registerContactFilter,
  SEARCH,
  TEXT_MAX,
  type ContactFilterScope,
} from '../../src/plugin-sdk/index.js';
import { liveDefinitionsOf, NAME_MAX, specOf } from './definitions.js';
import { judgeValue, VALUE_LIMITS } from './kinds.js';

/** The kinds whose value is text a fragment can be found in. */
const TEXT_KINDS = new Set(['text', 'long_text', 'url', 'email', 'phone']);

interface FieldCondition {
  name: string;
  equals?: unknown;
  contains?: string | null;
}

const FieldConditionInput = builder.inputType('FieldCondition', {
  description:
    'Contacts whose custom field `name` equals `equals` (a multi_select: holds that option) ' +
    'or, for text kinds, contains `contains` (any letter case). Exactly one of the two.',
  fields: (t) => ({
    name: t.string({ extensions: limited({ maxLength: NAME_MAX }) }),
    equals: t.field({
      type: 'JSON',
      required: false,
      extensions: limited({ maxLength: VALUE_LIMITS.longText }),
    }),
    contains: t.string({ required: false, extensions: limited({ maxLength: TEXT_MAX.search }) }),
  }),
});

/** `%fragment%` for LIKE, the caller's `%`, `_` and `\` taken literally. */
function containing(fragment: string): string {
  return `%${fragment.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

async function fieldCondition(scope: ContactFilterScope, condition: FieldCondition) {
  const { workspaceId } = scope;
  const definition = (await liveDefinitionsOf(scope, workspaceId)).find(
    (d) => d.name === condition.name,
  );
  if (!definition) throw refuse('field_unknown', { fields: [condition.name] });
  const equals = condition.equals ?? null;
  const contains = condition.contains?.trim() ?? '';
  if ((equals === null) === (contains === '') || definition.kind === 'repeater') {
    throw refuse('field_condition_invalid', { field: definition.name });
  }
  let match;
  if (contains !== '') {
    if (!TEXT_KINDS.has(definition.kind)) {
      throw refuse('field_condition_invalid', { field: definition.name });
    }
    match = sql`search like ${containing(contains)}`;
  } else if (definition.kind === 'multi_select') {
    const option = judgeValue({ ...specOf(definition), kind: 'select' }, equals);
    if (!option.ok || option.value === null) {
      throw refuse('value_kind_mismatch', { field: definition.name, kind: definition.kind });
    }
    match = sql`value @> ${JSON.stringify([option.value])}::jsonb`;
  } else {
    const judged = judgeValue(specOf(definition), equals);
    if (!judged.ok || judged.value === null) {
      throw refuse('value_kind_mismatch', { field: definition.name, kind: definition.kind });
    }
    match = sql`md5(value::text) = md5(${JSON.stringify(judged.value)}::jsonb::text)`;
  }
  // `= any(array(…))`: the page reads just the matching contacts by key.
  return sql`${contacts.id} = any(array(
    select contact_id from contact_field_values
    where workspace_id = ${workspaceId} and field_id = ${definition.id} and ${match}))`;
}

registerContactFilter<FieldCondition>({
  argument: 'field',
  type: FieldConditionInput,
  description: 'Keeps contacts by one custom field (docs/fields.md).',
  // A value's hash is an indexed equality; a fragment is a trigram search.
  cost: (condition) => (condition.contains?.trim() ? SEARCH : INDEXED_FILTER),
  condition: fieldCondition,
});
