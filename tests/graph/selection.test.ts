import { expect, test } from '@jest/globals';
import { buildSchema, graphql, type GraphQLResolveInfo } from 'graphql';
import { fieldsAskedOf, selects } from '../../src/graph/selection.js';

const schema = buildSchema(`
  interface Named { label: String }
  type Identity implements Named { channel: String label: String id: ID }
  type Contact implements Named { name: String label: String identities: [Identity] }
  union Found = Contact | Identity
  type Page { total: Int items: [Contact] }
  type Query { page: Page found: [Found] named: [Named] }
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

/** What `fieldsAskedOf` answers for `Identity`, asked from the root field `page`. */
async function askedOfIdentity(query: string): Promise<string[]> {
  let answer: string[] = [];
  const rootValue = {
    page: (_args: unknown, _ctx: unknown, info: GraphQLResolveInfo) => {
      answer = [...fieldsAskedOf(info, 'Identity')].sort();
      return null;
    },
  };
  const result = await graphql({ schema, source: query, rootValue });
  expect(result.errors).toBeUndefined();
  return answer;
}

test('the fields asked of a type are found anywhere in the operation', async () => {
  expect(await askedOfIdentity('{ page { items { name } } }')).toEqual([]);
  expect(await askedOfIdentity('{ page { items { identities { channel } } } }')).toEqual([
    'channel',
  ]);
  // Elsewhere than the asking field, through fragments, aliases and type conditions.
  expect(
    await askedOfIdentity(
      `{ page { items { identities { c: channel } } }
         found { ... on Identity { id } ...F } }
       fragment F on Identity { __typename }`,
    ),
  ).toEqual(['__typename', 'channel', 'id']);
  // Fields asked of an interface or a union the type belongs to count for it.
  expect(await askedOfIdentity('{ page { total } named { label } }')).toEqual(['label']);
  expect(await askedOfIdentity('{ page { total } found { __typename } }')).toEqual(['__typename']);
});

test('a field under a directive that may skip it still counts as asked', async () => {
  expect(
    await askedOfIdentity('{ page { items { identities { channel id @skip(if: true) } } } }'),
  ).toEqual(['channel', 'id']);
});
