import { describe, expect, test } from '@jest/globals';
import { getIntrospectionQuery, parse } from 'graphql';
import { asksOnlyForSchema, readsOnlySchema } from '../../../src/http/guards/schema-request.js';

const url = new URL('http://localhost/api/graphql');

function post(body: unknown): Buffer {
  return Buffer.from(JSON.stringify(body));
}

describe('readsOnlySchema', () => {
  test.each([
    ['__schema', '{ __schema { queryType { name } } }'],
    ['__type', '{ __type(name: "Contact") { name } }'],
    ['__typename', '{ __typename }'],
    ['several at once', '{ __typename s: __schema { types { name } } }'],
    ['GraphiQL’s introspection query', getIntrospectionQuery({ schemaDescription: true })],
  ])('an operation reading %s reads only the schema', (_what, query) => {
    expect(readsOnlySchema(parse(query))).toBe(true);
  });

  test.each([
    ['a data field beside it', '{ me { email } __schema { queryType { name } } }'],
    ['a data field alone', '{ version }'],
    ['an inline fragment at the root', '{ ... on Query { __schema { queryType { name } } } }'],
    ['a fragment spread at the root', '{ ...F } fragment F on Query { __typename }'],
    ['a mutation', 'mutation { __typename }'],
    ['a subscription', 'subscription { __typename }'],
  ])('an operation with %s does not', (_what, query) => {
    expect(readsOnlySchema(parse(query))).toBe(false);
  });

  test('judges the operation that would run, by its name', () => {
    const document = parse('query A { me { email } } query B { __schema { queryType { name } } }');
    expect(readsOnlySchema(document, 'B')).toBe(true);
    expect(readsOnlySchema(document, 'A')).toBe(false);
    expect(readsOnlySchema(document)).toBe(false);
  });
});

describe('asksOnlyForSchema', () => {
  test('reads a JSON POST’s query and operation name', () => {
    const query = getIntrospectionQuery();
    expect(asksOnlyForSchema(url, post({ query, operationName: 'IntrospectionQuery' }))).toBe(true);
    expect(asksOnlyForSchema(url, post({ query, operationName: 'Other' }))).toBe(false);
  });

  test('reads a GET’s query', () => {
    const get = new URL(url);
    get.searchParams.set('query', '{ __schema { queryType { name } } }');
    expect(asksOnlyForSchema(get, null)).toBe(true);
  });

  test.each([
    ['a body that is not JSON', Buffer.from('query={__schema{queryType{name}}}')],
    ['a query that does not parse', post({ query: '{ __schema { ' })],
    ['no query', post({ variables: {} })],
    ['a query nested past the stack', post({ query: `{ __schema ${'{ a '.repeat(100_000)} }` })],
  ])('%s is not such a request', (_what, body) => {
    expect(asksOnlyForSchema(url, body)).toBe(false);
  });
});
