import { describe, expect, test } from '@jest/globals';
import { graphql, type GraphQLObjectType } from 'graphql';
import { builder } from '../../src/graph/builder.js';
import { buildSchema } from '../../src/graph/schema.js';
import { extendCoreType, STATEMENT } from '../../src/plugin-sdk/index.js';

// A core-like type whose rows carry more than an id.
const Thing = builder.objectRef<{ id: string; secret: string }>('SdkThing').implement({
  fields: (t) => ({ id: t.exposeID('id') }),
});
builder.queryField('sdkThing', (t) =>
  t.field({ type: Thing, resolve: () => ({ id: 't1', secret: 'core-only' }) }),
);
extendCoreType(Thing, 'seen', (t) =>
  t.field({
    type: 'String',
    args: { suffix: t.arg.string({ required: false }) },
    resolve: (parent, args) => `${JSON.stringify(parent)}${args.suffix ?? ''}`,
  }),
);

describe('extendCoreType', () => {
  test('the field costs a statement a parent row unless it declares its cost', () => {
    const seen = (buildSchema().getType('SdkThing') as GraphQLObjectType).getFields().seen;
    expect(seen?.extensions).toMatchObject({ complexity: { cost: STATEMENT } });
  });

  test('the field resolver receives the id only, never the core parent object', async () => {
    const result = await graphql({
      schema: buildSchema(),
      source: '{ sdkThing { seen(suffix: "!") } }',
      contextValue: {
        actor: {
          userId: 'u1',
          workspaceId: 'w1',
          role: 'member',
          capabilities: new Set(),
          token: null,
          sessionId: 's1',
        },
      },
    });
    expect(result).toEqual({ data: { sdkThing: { seen: '{"id":"t1"}!' } } });
  });

  test('the field is marked as a plugin resolver for the naming test', () => {
    const type = buildSchema().getType('SdkThing') as GraphQLObjectType;
    expect(type.getFields().seen?.extensions.pluginResolver).toBe(true);
  });
});
