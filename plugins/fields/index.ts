// The fields plugin (SPEC 2.7): custom fields on contacts. Definitions per workspace, held
// in the process's workspace cache; values and repeater entries in the plugin's own
// tables; a service the importer writes values through (docs/fields.md).
import { definePlugin, provideService } from '../../src/plugin-sdk/index.js';
import { checkCells, exportField, readCells } from './cells.js';
import { fieldsContactData } from './contact-data.js';
import { liveDefinitionsOf } from './definitions.js';
import './filter.js';
import { MANAGE_FIELDS } from './graph.js';
import {
  checkValues,
  FIELDS_CHANGED,
  fillValuesMany,
  writableField,
  writeValues,
  writeValuesFrom,
  writeValuesMany,
} from './values.js';

provideService('fields', {
  writableFields: async (scope, workspaceId) =>
    (await liveDefinitionsOf(scope, workspaceId))
      .filter((definition) => definition.kind !== 'repeater')
      .map(writableField),
  checkValues: (fields, values) => checkValues(fields, values),
  checkCells,
  exportFields: async (scope, workspaceId) =>
    (await liveDefinitionsOf(scope, workspaceId)).map(exportField),
  readCells,
  writeValues,
  writeValuesMany,
  fillValuesMany,
  writeValuesFrom,
});

const plain = (message: string) => ({ code: 'VALIDATION' as const, message });

export default definePlugin({
  id: 'fields',
  // Tokens may be narrowed to fields:read / fields:write; values are contact data.
  areas: ['fields'],
  capabilities: [MANAGE_FIELDS],
  // The stock admin manages definitions; members read them and write values.
  roles: { admin: [MANAGE_FIELDS] },
  events: [FIELDS_CHANGED],
  // Values and entries reference contacts: erased with one, folded into a merge's target.
  contactData: fieldsContactData,
  reasons: {
    field_name_malformed: plain(
      'a field name is camelCase: a lower-case letter, then letters and digits',
    ),
    field_label_required: plain('a field needs a label'),
    field_label_too_long: plain('a field label holds at most 100 characters'),
    field_kind_unknown: plain('unknown field kind'),
    field_name_reserved: plain('that name is reserved'),
    field_sub_fields_required: plain('a repeater needs at least one sub field'),
    field_sub_fields_unexpected: plain('only a repeater holds sub fields'),
    field_sub_field_nested: plain('a sub field cannot be a repeater'),
    field_sub_field_name_invalid: plain('a sub field name is camelCase'),
    field_sub_field_name_taken: plain('two sub fields of one repeater share a name'),
    field_sub_field_name_reserved: plain('a sub field cannot be named id'),
    field_name_taken: { code: 'CONFLICT', message: 'another field holds that name' },
    field_kind_locked: {
      code: 'CONFLICT',
      message: 'an archived field of that name keeps its kind and sub fields',
    },
    field_not_found: { code: 'NOT_FOUND', message: 'field not found' },
    field_order_incomplete: plain('name every live field exactly once'),
    field_unknown: {
      code: 'VALIDATION',
      message: (meta) => `no field named ${(meta.fields as string[]).join(', ')}`,
    },
    value_kind_mismatch: {
      code: 'VALIDATION',
      message: (meta) => `${String(meta.field)} takes a ${String(meta.kind)} value`,
    },
    values_not_an_object: plain('values are an object of field names to values'),
    field_not_a_repeater: plain('that field keeps no entries'),
    field_entry_empty: plain('an entry needs at least one cell'),
    field_entry_not_found: { code: 'NOT_FOUND', message: 'entry not found' },
    field_entries_full: {
      code: 'CONFLICT',
      message: (meta) => `a repeater holds at most ${String(meta.max)} entries`,
    },
    field_repeater_entries_only: plain('a repeater takes its entries one at a time'),
    field_options_required: plain('a select field needs options'),
    field_option_invalid: plain('options are distinct, not blank, at most 100 characters'),
    field_currency_invalid: plain('a currency field needs an ISO 4217 code'),
    field_setting_unexpected: {
      code: 'VALIDATION',
      message: (meta) => `this kind takes no ${String(meta.setting)}`,
    },
    field_condition_invalid: {
      code: 'VALIDATION',
      message: (meta) =>
        `a condition on ${String(meta.field)} takes either equals or, for a text, contains`,
    },
    field_definitions_full: {
      code: 'CONFLICT',
      message: (meta) => `a workspace holds at most ${String(meta.max)} live fields`,
    },
  },
});
