import { describe, expect, test } from '@jest/globals';
import { GraphQLError, type ValidationRule } from 'graphql';
import { createSchema, createYoga, type Plugin } from 'graphql-yoga';
import { useDocumentCache } from '../../src/graph/document-cache.js';

const schema = createSchema({
  typeDefs: 'type Query { hello: String, secret: String }',
  resolvers: { Query: { hello: () => 'world', secret: () => 'kept' } },
});

/** Refuses `secret` (a rule some requests validate with, as a plugin might add). */
const noSecret: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value === 'secret') context.reportError(new GraphQLError('secret refused'));
  },
});

function served() {
  const counts = { parses: 0, validations: 0 };
  const counting: Plugin = {
    onParse({ parseFn, setParseFn }) {
      setParseFn((...args) => {
        counts.parses += 1;
        return parseFn(...args);
      });
    },
    onValidate({ validateFn, setValidationFn, addValidationRule, context }) {
      const { request } = context as { request: Request };
      if (request.headers.get('x-strict') === '1') addValidationRule(noSecret);
      setValidationFn((...args) => {
        counts.validations += 1;
        return validateFn(...args);
      });
    },
  };
  const yoga = createYoga({
    schema,
    parserAndValidationCache: false,
    plugins: [counting, useDocumentCache()],
  });
  async function ask(query: string, strict = false) {
    const response = await yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(strict ? { 'x-strict': '1' } : {}) },
      body: JSON.stringify({ query }),
    });
    return (await response.json()) as { data?: unknown; errors?: { message: string }[] };
  }
  return { counts, ask };
}

describe('the parse and validation cache', () => {
  test('a document asked again is neither parsed nor validated again', async () => {
    const { counts, ask } = served();
    for (let i = 0; i < 3; i += 1)
      expect(await ask('{ hello }')).toEqual({ data: { hello: 'world' } });
    expect(counts).toEqual({ parses: 1, validations: 1 });
  });

  test('a document that does not parse answers the same error, parsed once', async () => {
    const { counts, ask } = served();
    const first = await ask('{ hello');
    expect(first.errors?.[0]?.message).toMatch(/^Syntax Error/);
    expect(await ask('{ hello')).toEqual(first);
    expect(counts.parses).toBe(1);
  });

  test('each list of rules keeps its own validations', async () => {
    const { counts, ask } = served();
    expect(await ask('{ secret }')).toEqual({ data: { secret: 'kept' } });
    expect((await ask('{ secret }', true)).errors?.map((e) => e.message)).toEqual([
      'secret refused',
    ]);
    expect(await ask('{ secret }')).toEqual({ data: { secret: 'kept' } });
    expect((await ask('{ secret }', true)).errors?.map((e) => e.message)).toEqual([
      'secret refused',
    ]);
    expect(counts).toEqual({ parses: 1, validations: 2 });
  });
});
