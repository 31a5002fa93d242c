import { describe, expect, test } from '@jest/globals';
import { parse } from 'graphql';
import { findIntrospectionField } from '../../src/graph/introspection.js';

function pathOf(query: string, operationName?: string): string[] | null {
  return findIntrospectionField(parse(query), operationName)?.path ?? null;
}

describe('findIntrospectionField', () => {
  test.each<[string, string, string[]]>([
    ['__schema at the root', '{ __schema { queryType { name } } }', ['__schema']],
    ['__type at the root', '{ __type(name: "Contact") { name } }', ['__type']],
    ['an aliased __schema', '{ s: __schema { queryType { name } } }', ['s']],
    ['one beside other fields', '{ locale version t: __type(name: "Task") { name } }', ['t']],
    ['one under another field', '{ me { id q: __schema { types { name } } } }', ['me', 'q']],
    ['one in an inline fragment', '{ ... on Query { __schema { types { name } } } }', ['__schema']],
    [
      'one in a named fragment',
      'query { ...F } fragment F on Query { __type(name: "Contact") { name } }',
      ['__type'],
    ],
    [
      'one in a fragment spread inside a field',
      '{ me { ...G } } fragment G on Account { n: __schema { types { name } } }',
      ['me', 'n'],
    ],
    [
      'one in a fragment spread inside a fragment',
      '{ ...A } fragment A on Query { ...B } fragment B on Query { __schema { types { name } } }',
      ['__schema'],
    ],
    ['one even under @skip', '{ __schema @skip(if: true) { types { name } } }', ['__schema']],
  ])('finds %s', (_what, query, path) => {
    expect(pathOf(query)).toEqual(path);
  });

  test.each([
    ['__typename', '{ __typename }'],
    ['__typename under a field', '{ me { __typename id } }'],
    ['a field named like it without underscores', '{ schema: version }'],
    ['an unused fragment', '{ version } fragment F on Query { __schema { types { name } } }'],
  ])('passes over %s', (_what, query) => {
    expect(pathOf(query)).toBeNull();
  });

  test('reads only the operation that runs', () => {
    const document = 'query A { version } query B { __schema { types { name } } }';
    expect(pathOf(document, 'A')).toBeNull();
    expect(pathOf(document, 'B')).toEqual(['__schema']);
  });

  test('answers null when no operation can be chosen', () => {
    expect(pathOf('query A { version } query B { __schema { types { name } } }')).toBeNull();
  });

  test('ends on fragments that spread each other', () => {
    expect(pathOf('{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }')).toBeNull();
  });
});
