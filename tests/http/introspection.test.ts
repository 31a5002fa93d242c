import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { getIntrospectionQuery } from 'graphql';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { sessionCookieFor } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

// Both settings on one database: a service as shipped, and one with the interactive page.
let db: TestDatabase;
let plain: TestService;
let dev: TestService;

beforeAll(async () => {
  db = await createTestDatabase();
  plain = await startTestService({ db });
  dev = await startTestService({ db, env: { SVC_DEV_GRAPHIQL: '1' } });
});

afterAll(async () => {
  await plain?.stop();
  await dev?.stop();
  await db?.drop();
});

const UNAUTHENTICATED = {
  code: 'UNAUTHENTICATED',
  reason: 'authentication_required',
  meta: {},
};

describe('without SVC_DEV_GRAPHIQL', () => {
  test('an anonymous __schema is refused in the spec’s error shape', async () => {
    const { status, body } = await plain.anonymous('{ __schema { queryType { name } } }');
    expect(status).toBe(200);
    expect(body).toEqual({
      data: null,
      errors: [
        {
          message: 'authentication required',
          locations: [{ line: 1, column: 3 }],
          path: ['__schema'],
          extensions: UNAUTHENTICATED,
        },
      ],
    });
  });

  test.each([
    ['__type', '{ __type(name: "Contact") { name } }', ['__type']],
    ['an alias', '{ s: __schema { queryType { name } } }', ['s']],
    ['an inline fragment', '{ ... on Query { t: __type(name: "Task") { name } } }', ['t']],
    [
      'a named fragment',
      'query { ...F } fragment F on Query { __type(name: "Contact") { name } }',
      ['__type'],
    ],
    ['an open field beside it', '{ locale __schema { queryType { name } } }', ['__schema']],
  ])('an anonymous introspection through %s is refused as a whole', async (_how, query, path) => {
    const { body } = await plain.anonymous(query);
    expect(body.data).toBeNull();
    expect(body.errors).toHaveLength(1);
    expect(body.errors?.[0]).toMatchObject({ path, extensions: UNAUTHENTICATED });
  });

  test('GraphiQL’s whole introspection query from an anonymous caller is refused', async () => {
    const query = getIntrospectionQuery({ schemaDescription: true, inputValueDeprecation: true });
    const { body } = await plain.anonymous(query);
    expect(body).toEqual({
      data: null,
      errors: [{ message: 'authentication required', extensions: UNAUTHENTICATED }],
    });
  });

  test('an anonymous __typename still answers', async () => {
    const { body } = await plain.anonymous('{ __typename }');
    expect(body).toEqual({ data: { __typename: 'Query' } });
  });

  test('an anonymous login may still ask for __typename', async () => {
    const { body } = await plain.anonymous(
      'mutation { login(email: "nobody@example.com", password: "wrong password") { __typename } }',
    );
    expect(body.errors?.[0]?.extensions).toMatchObject({ reason: 'credentials_invalid' });
  });

  test('a caller with a token introspects', async () => {
    const { body } = await plain.graph('{ __type(name: "Contact") { name } }');
    expect(body).toEqual({ data: { __type: { name: 'Contact' } } });
  });

  test('a caller with a session introspects', async () => {
    const cookie = await sessionCookieFor(db.database.db, plain.admin);
    const { body } = await plain.graph('{ __schema { queryType { name } } }', undefined, {
      cookie,
    });
    expect(body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
  });
});

describe('with SVC_DEV_GRAPHIQL', () => {
  test('an anonymous caller introspects, so the interactive page can load the schema', async () => {
    const { body } = await dev.anonymous('{ __schema { queryType { name } } }');
    expect(body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
  });

  test('other fields still need a credential', async () => {
    const { body } = await dev.anonymous('{ me { email } }');
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions).toEqual(UNAUTHENTICATED);
  });
});
