import { expect, test } from '@jest/globals';
import { builder } from '../../src/graph/builder.js';
import { buildSchema } from '../../src/graph/schema.js';
import { extendCoreType } from '../../src/plugin-sdk/index.js';

const Thing = builder.objectRef<{ id: string }>('SdkBare').implement({
  fields: (t) => ({ id: t.exposeID('id') }),
});
builder.queryField('sdkBare', (t) => t.field({ type: Thing, resolve: () => ({ id: '1' }) }));
// Bypassing the types on purpose: the SDK still refuses a field with no resolver.
extendCoreType(Thing, 'id2', (t) => t.field({ type: 'ID' } as never));

test('a plugin field on a core type without its own resolver fails the schema build, naming it', () => {
  expect(() => buildSchema()).toThrow(
    'SdkBare.id2: a plugin field on a core type needs its own resolver',
  );
});
