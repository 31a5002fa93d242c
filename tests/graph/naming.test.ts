// The spec's graph/naming_test: every type a plugin defines starts with the plugin id
// (ignoring case), and every field a plugin adds to a core type has its own resolver.
import { beforeAll, describe, expect, test } from '@jest/globals';
import { isObjectType } from 'graphql';
import {
  computeArtifacts,
  pluginTypeNames,
  type SchemaArtifacts,
} from '../../src/graph/artifacts.js';
import { buildSchema } from '../../src/graph/schema.js';
import { loadPlugins, stockPluginsDir } from '../../src/plugin-host/host.js';

/** Types a plugin may define although their names do not start with its id. */
const allowlist: Record<string, string[]> = {
  // SPEC 2.7 speaks of "a field" and "field(...)"; `FieldsDefinition` would read as a
  // typo to every integrator, so the fields plugin's types use the singular.
  fields: [
    'FieldDefinition',
    'FieldSubField',
    'FieldEntry',
    'FieldDefineInput',
    'FieldSubFieldInput',
    'FieldCondition',
  ],
  // SPEC 2.10 and 4.2 name the record "Import" (`importJob`, `importUpload`).
  importer: [
    'Import',
    'ImportRow',
    'ImportReason',
    'ImportField',
    'ImportColumnInput',
    'ImportProgress',
  ],
};

let artifacts: SchemaArtifacts;

beforeAll(async () => {
  artifacts = await computeArtifacts(stockPluginsDir);
}, 60_000);

/** The names among `names` that break the rule for `pluginId`. */
function offenders(pluginId: string, names: string[]): string[] {
  const allowed = new Set(allowlist[pluginId] ?? []);
  return names.filter(
    (name) => !name.toLowerCase().startsWith(pluginId.toLowerCase()) && !allowed.has(name),
  );
}

describe('plugin type names', () => {
  test('every type a stock plugin defines starts with its id', () => {
    const found = [...artifacts.perPlugin].flatMap(([id, schema]) =>
      offenders(id, pluginTypeNames(artifacts.core, schema)).map((name) => `${id}: ${name}`),
    );
    expect(found).toEqual([]);
  });

  test('the rule names an offender and ignores case', () => {
    expect(offenders('note', ['Note', 'NOTEDraft', 'noteThing', 'Draft'])).toEqual(['Draft']);
  });
});

describe('plugin fields on core types', () => {
  test('each has its own resolver, added through the SDK', async () => {
    await loadPlugins({ dir: stockPluginsDir });
    const schema = buildSchema();
    const bare: string[] = [];
    for (const [typeName, coreType] of Object.entries(artifacts.core.getTypeMap())) {
      const type = schema.getType(typeName);
      if (
        !isObjectType(coreType) ||
        !isObjectType(type) ||
        ['Query', 'Mutation', 'Subscription'].includes(typeName)
      )
        continue;
      const coreFields = coreType.getFields();
      for (const field of Object.values(type.getFields())) {
        if (coreFields[field.name]) continue;
        if (field.extensions?.pluginResolver !== true) bare.push(`${typeName}.${field.name}`);
      }
    }
    expect(bare).toEqual([]);
  });
});
