import { expect, test } from '@jest/globals';
import { buildSchema, graphql, type GraphQLResolveInfo } from 'graphql';
import { selects } from '../../src/graph/selection.js';

const schema = buildSchema(`
  type Identity { channel: String }
  type Contact { name: String identities: [Identity] }
  type Page { total: Int items: [Contact] }
  type Query { page: Page }
`);

/** What `selects` answers for the root field `page` of `query`, for each path asked. */
async function asked(query: string, paths: string[][]): Promise<boolean[]> {
  let answers: boolean[] = [];
  const rootValue = {
    page: (_args: unknown, _ctx: unknown, info: GraphQLResolveInfo) => {
      answers = paths.map((path) => selects(info, ...path));
      return { total: 0, items: [] };
    },
  };
  const result = await graphql({ schema, source: query, rootValue });
  expect(result.errors).toBeUndefined();
  return answers;
}

const PATHS = [['total'], ['items'], ['items', 'identities'], ['items', 'identities', 'channel']];

test('a path is selected through aliases, inline fragments and fragment spreads', async () => {
  expect(await asked('{ page { total items { name } } }', PATHS)).toEqual([
    true,
    true,
    false,
    false,
  ]);
  expect(
    await asked(
      `{ page { ... on Page { list: items { ...C } } } }
       fragment C on Contact { name ids: identities { channel } }`,
      PATHS,
    ),
  ).toEqual([false, true, true, true]);
});

test('a field asked twice counts wherever one of its selections names the path', async () => {
  expect(
    await asked('{ page { items { name } again: items { identities { channel } } } }', PATHS),
  ).toEqual([false, true, true, true]);
});
