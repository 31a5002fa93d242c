import { describe, expect, test } from '@jest/globals';
import { asksForWrite } from '../../../src/http/guards/operation-kind.js';

const body = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('asksForWrite: a graph write is judged by its operation, not its method', () => {
  test.each([
    ['a query', { query: '{ me { email } }' }],
    ['a named query', { query: 'query Me { me { email } }', operationName: 'Me' }],
    ['a subscription', { query: 'subscription { coreEvent { type } }' }],
    [
      'the query a document names among a mutation',
      { query: 'query A { version } mutation B { logout }', operationName: 'A' },
    ],
  ])('%s is a read', (_what, request) => {
    expect(asksForWrite(body(request))).toBe(false);
  });

  test.each([
    ['a mutation', body({ query: 'mutation { logout }' })],
    ['an anonymous mutation', body({ query: '{ version } ' + 'mutation { logout }' })],
    [
      'the mutation a document names among a query',
      body({ query: 'query A { version } mutation B { logout }', operationName: 'B' }),
    ],
    ['a name the document lacks', body({ query: '{ version }', operationName: 'Other' })],
    ['a body that is not JSON', Buffer.from('query={ version }')],
    ['a document that does not parse', body({ query: '{ version ' })],
    ['a body without a query', body({ extensions: {} })],
    ['a batch', body([{ query: '{ version }' }])],
    ['an empty body', Buffer.alloc(0)],
    ['no body', null],
  ])('%s is judged a write', (_what, request) => {
    expect(asksForWrite(request)).toBe(true);
  });
});
