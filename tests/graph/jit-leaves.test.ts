import { describe, expect, test } from '@jest/globals';
import type { GraphQLError, GraphQLObjectType, GraphQLScalarType } from 'graphql';
import { buildSchema, execute, parse, type ExecutionResult } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';

// graphql-jit is patched (patches/graphql-jit+0.8.9.patch): every leaf is read through a
// hoisted function that builds an error's path only when the value fails, and list items
// that are not promises, and resolvers answering no promise, skip the promise machinery.
// Each case answers as graphql-js does.
const schema = buildSchema(`
  scalar Odd
  type Query { items: [Item]! later: [Item] }
  type Item { id: ID! label: String odd: Odd tags: [String!] extra: String sure: String! }
`);
const oddScalar = schema.getType('Odd') as GraphQLScalarType;
oddScalar.serialize = (value: unknown) => {
  if (value === 'throw') throw new Error('not odd at all');
  if (value === 'invalid') return undefined;
  return value;
};

const rows = [
  { id: '1', label: 'one', odd: 'fine', tags: ['a', 'b'] },
  { id: null, label: 'no id', odd: 'fine', tags: [] },
  { id: '3', label: new Error('label refused'), odd: 'throw', tags: ['c', null] },
  { id: '4', label: null, odd: null, tags: null },
];
const fields = schema.getQueryType()!.getFields();
fields.items!.resolve = () => rows;
// Resolvers answering a value, a promise, null, a throw and a rejection, by row.
const itemFields = (schema.getType('Item') as GraphQLObjectType).getFields();
const answered = (row: { id: string | null }, nonNull: boolean) => {
  switch (row.id) {
    case '1':
      return 'value';
    case null:
      return Promise.resolve('promised');
    case '3':
      throw new Error('resolver threw');
    default:
      return nonNull ? Promise.reject(new Error('resolver rejected')) : null;
  }
};
itemFields.extra!.resolve = (row: { id: string | null }) => answered(row, false);
itemFields.sure!.resolve = (row: { id: string | null }) => answered(row, true);
fields.later!.resolve = () => rows.map((row, i) => (i % 2 === 0 ? Promise.resolve(row) : row));

async function both(query: string): Promise<[ExecutionResult, ExecutionResult]> {
  const document = parse(query);
  const compiled = compileQuery(schema, document);
  if (!isCompiledQuery(compiled)) throw new Error('not compiled');
  const jit = await compiled.query({}, {}, {});
  const reference = await execute({ schema, document, rootValue: {} });
  return [jit, reference];
}

const shape = (result: ExecutionResult) => ({
  data: result.data,
  errors: (result.errors ?? [])
    .map((error: GraphQLError) => ({
      message: error.message,
      path: error.path,
      locations: error.locations,
    }))
    .sort((a, b) => JSON.stringify(a.path).localeCompare(JSON.stringify(b.path))),
});

describe('graphql-jit leaves, as patched', () => {
  test.each([
    ['plain values', '{ items { id label odd tags } }'],
    ['promises and values in one list', '{ later { id label odd tags } }'],
    ['a leaf of a nested list', '{ items { tags } later { tags } }'],
    ['resolvers: a value, a promise, null, a throw, a rejection', '{ items { extra sure } }'],
    ['resolvers beside promised items', '{ later { id extra sure } }'],
  ])('%s: data, messages, paths and locations as graphql-js gives them', async (_, query) => {
    const [jit, reference] = await both(query);
    expect(shape(jit)).toEqual(shape(reference));
    expect(jit.errors?.length).toBeGreaterThan(0);
  });

  test('a scalar serializing to nothing is an error at its path (graphql-jit words it its own way)', async () => {
    const document = parse('{ later { odd } }');
    const compiled = compileQuery(schema, document);
    if (!isCompiledQuery(compiled)) throw new Error('not compiled');
    const saved = rows[0]!.odd;
    rows[0]!.odd = 'invalid';
    try {
      const result = await compiled.query({}, {}, {});
      expect(shape(result).errors).toEqual([
        {
          message: 'Expected a value of type "Odd" but received: invalid',
          path: ['later', 0, 'odd'],
          locations: [{ line: 1, column: 11 }],
        },
        {
          message: 'not odd at all',
          path: ['later', 2, 'odd'],
          locations: [{ line: 1, column: 11 }],
        },
      ]);
      expect((result.data as { later: unknown[] }).later[0]).toEqual({ odd: null });
    } finally {
      rows[0]!.odd = saved;
    }
  });
});
