import { expect, test } from '@jest/globals';
import { createSchema, createYoga } from 'graphql-yoga';
import { useCompiledQueries } from '../../src/graph/compiled-queries.js';

/** A schema whose resolvers count their runs; `broken` and `fail` always throw. */
function counted() {
  const runs = { hello: 0, broken: 0, fail: 0 };
  const schema = createSchema({
    typeDefs: /* GraphQL */ `
      type Query {
        hello(times: Int): String
        broken: String
      }
      type Mutation {
        fail: String
      }
    `,
    resolvers: {
      Query: {
        hello: (_: unknown, args: { times?: number | null }) => {
          runs.hello += 1;
          return 'hi'.repeat(args.times ?? 1);
        },
        broken: () => {
          runs.broken += 1;
          throw new Error('broken on purpose');
        },
      },
      Mutation: {
        fail: () => {
          runs.fail += 1;
          throw new Error('failed on purpose');
        },
      },
    },
  });
  const plain = createYoga({ schema, maskedErrors: false, logging: false });
  const compiled = createYoga({
    schema,
    maskedErrors: false,
    logging: false,
    plugins: [useCompiledQueries()],
  });
  return { runs, plain, compiled };
}

async function ask(
  yoga: ReturnType<typeof createYoga>,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<unknown> {
  const response = await yoga.fetch('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

test('a query answers as graphql-js does, its resolvers run once', async () => {
  const { runs, plain, compiled } = counted();
  const query = 'query ($n: Int) { a: hello(times: $n) b: hello }';
  const expected = await ask(plain, query, { n: 2 });
  runs.hello = 0;
  expect(await ask(compiled, query, { n: 2 })).toEqual(expected);
  expect(await ask(compiled, query, { n: 3 })).toEqual({ data: { a: 'hihihi', b: 'hi' } });
  expect(runs.hello).toBe(4);
});

test('a query that meets an error answers graphql-js’s error, locations and path included', async () => {
  const { runs, plain, compiled } = counted();
  const query = '{ hello\n  broken }';
  const expected = await ask(plain, query);
  expect(expected).toEqual({
    data: { hello: 'hi', broken: null },
    errors: [
      { message: 'broken on purpose', locations: [{ line: 2, column: 3 }], path: ['broken'] },
    ],
  });
  runs.broken = 0;
  expect(await ask(compiled, query)).toEqual(expected);
  // Compiled, then run again by graphql-js for its answer.
  expect(runs.broken).toBe(2);
});

test('a malformed variable answers graphql-js’s message', async () => {
  const { plain, compiled } = counted();
  const query = 'query ($n: Int) { hello(times: $n) }';
  const expected = await ask(plain, query, { n: 'many' });
  expect(JSON.stringify(expected)).toContain('Int cannot represent non-integer value');
  expect(await ask(compiled, query, { n: 'many' })).toEqual(expected);
});

test('a mutation never runs twice, even when it fails', async () => {
  const { runs, compiled } = counted();
  const answer = (await ask(compiled, 'mutation { fail }')) as { errors: { message: string }[] };
  expect(answer.errors[0]?.message).toBe('failed on purpose');
  expect(runs.fail).toBe(1);
});
