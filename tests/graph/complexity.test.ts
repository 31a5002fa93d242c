import { describe, expect, test } from '@jest/globals';
import {
  GraphQLList,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  buildSchema,
  parse,
} from 'graphql';
import { createSchema, createYoga } from 'graphql-yoga';
import {
  complexityCheck,
  operationComplexity,
  useComplexityLimit,
} from '../../src/graph/complexity.js';

const typeDefs = /* GraphQL */ `
  type Query {
    contacts(first: Int, after: String): ContactConnection!
    contactPage(limit: Int, offset: Int): ContactPage!
    contact(id: ID!): Contact
    recentContacts(first: Int = 10): [Contact!]!
    node(id: ID!): Node
    search(text: String!): [SearchHit!]!
    version: String!
  }

  type Subscription {
    contactsChanged(first: Int): [Contact!]!
  }

  interface Node {
    id: ID!
  }

  union SearchHit = Contact | Task

  type ContactConnection {
    edges: [ContactEdge!]!
    pageInfo: PageInfo!
  }

  type ContactEdge {
    cursor: String!
    node: Contact!
  }

  type PageInfo {
    hasNextPage: Boolean!
    endCursor: String
  }

  type ContactPage {
    items: [Contact!]!
    total: Int!
    limit: Int!
  }

  type Contact implements Node {
    id: ID!
    name: String!
    identities: [Identity!]!
    tasks(first: Int): [Task!]!
  }

  type Identity {
    channel: String!
    identifier: String!
  }

  type Task implements Node {
    id: ID!
    title: String!
    contact: Contact
  }
`;

const schema = buildSchema(typeDefs);

function cost(
  query: string,
  options: { variables?: Record<string, unknown>; operationName?: string } = {},
): number {
  return operationComplexity({
    schema,
    document: parse(query),
    defaultPageSize: 50,
    ...options,
  });
}

describe('operationComplexity', () => {
  test('a leaf field costs 1, __typename included', () => {
    expect(cost('{ version __typename }')).toBe(2);
  });

  test('reading one field of each row costs 2 a row', () => {
    expect(cost('{ recentContacts(first: 30) { id } }')).toBe(60);
  });

  test('each further field of a row adds 1 a row', () => {
    expect(cost('{ recentContacts(first: 30) { id name } }')).toBe(90);
  });

  test('a non-list object field costs only what it selects', () => {
    expect(cost('{ contact(id: "1") { id name } }')).toBe(2);
  });

  test('a connection passes first down to its edges', () => {
    expect(cost('{ contacts(first: 200) { edges { node { id } } } }')).toBe(400);
  });

  test('the leaves of pageInfo and cursor are counted beside the rows', () => {
    const query =
      '{ contacts(first: 10) { edges { cursor node { id } } pageInfo { hasNextPage } } }';
    expect(cost(query)).toBe(10 * 3 + 1);
  });

  test('a page passes limit down to its items and counts total and limit once', () => {
    expect(cost('{ contactPage(limit: 20) { items { id name } total limit } }')).toBe(62);
  });

  test('nested pages multiply', () => {
    const query = '{ contacts(first: 200) { edges { node { id tasks(first: 200) { id } } } } }';
    expect(cost(query)).toBe(200 * (1 + 1 + 200 * 2));
  });

  test('a page size carried down does not reach the lists inside its rows', () => {
    const query = '{ contacts(first: 10) { edges { node { identities { channel } } } } }';
    expect(cost(query)).toBe(10 * (1 + 1 * 2));
  });

  test('first may come from a variable', () => {
    const query = 'query ($n: Int) { contacts(first: $n) { edges { node { id } } } }';
    expect(cost(query, { variables: { n: 5 } })).toBe(10);
  });

  test('an unsupplied variable takes the default the operation declares', () => {
    const query = 'query ($n: Int = 7) { contacts(first: $n) { edges { node { id } } } }';
    expect(cost(query)).toBe(14);
  });

  test('an absent first takes the default the schema declares', () => {
    expect(cost('{ recentContacts { id } }')).toBe(20);
  });

  test('an unsupplied variable without a declared default takes the schema default', () => {
    expect(cost('query ($n: Int) { recentContacts(first: $n) { id } }')).toBe(20);
  });

  test('an absent first with no schema default takes the default page size', () => {
    expect(cost('{ contacts { edges { node { id } } } }')).toBe(100);
  });

  test('a null first takes the default page size', () => {
    expect(cost('{ recentContacts(first: null) { id } }')).toBe(100);
  });

  test('a negative page size counts as no rows', () => {
    const query = '{ contacts(first: -5) { edges { node { id } } pageInfo { hasNextPage } } }';
    expect(cost(query)).toBe(1);
  });

  test('a list without paging counts one row', () => {
    expect(cost('{ contact(id: "1") { identities { channel identifier } } }')).toBe(3);
  });

  test('a list without paging counts the rows its field extensions estimate', () => {
    const estimated = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          tags: {
            type: new GraphQLList(GraphQLString),
            extensions: { complexity: { rows: 20 } },
          },
        },
      }),
    });
    const complexity = operationComplexity({
      schema: estimated,
      document: parse('{ tags }'),
      defaultPageSize: 50,
    });
    expect(complexity).toBe(20);
  });

  test('named fragments are expanded', () => {
    const query = `
      { contactPage(limit: 10) { items { ...ContactFields } } }
      fragment ContactFields on Contact { id name }
    `;
    expect(cost(query)).toBe(30);
  });

  test('a field selected both directly and through a fragment counts once', () => {
    const query = `
      { contactPage(limit: 10) { items { id ...ContactFields } } }
      fragment ContactFields on Contact { id name }
    `;
    expect(cost(query)).toBe(30);
  });

  test('inline fragments are expanded', () => {
    expect(cost('{ contactPage(limit: 10) { items { ... on Contact { id } } } }')).toBe(20);
  });

  test('a field under @include(if: false) costs nothing', () => {
    const query = `query ($withTasks: Boolean!) {
      contactPage(limit: 10) { items { id tasks(first: 5) @include(if: $withTasks) { id } } }
    }`;
    expect(cost(query, { variables: { withTasks: false } })).toBe(20);
  });

  test('a field under @include(if: true) is counted', () => {
    const query = `query ($withTasks: Boolean!) {
      contactPage(limit: 10) { items { id tasks(first: 5) @include(if: $withTasks) { id } } }
    }`;
    expect(cost(query, { variables: { withTasks: true } })).toBe(10 * (1 + 1 + 5 * 2));
  });

  test('a fragment under @skip(if: true) costs nothing', () => {
    const query = '{ version ... on Query @skip(if: true) { recentContacts { id } } }';
    expect(cost(query)).toBe(1);
  });

  test('an abstract type costs its most expensive possible type', () => {
    const query = `{ node(id: "1") {
      ... on Contact { id name tasks(first: 5) { id } }
      ... on Task { id title }
    } }`;
    expect(cost(query)).toBe(1 + 1 + 5 * 2);
  });

  test('a list of a union counts each row at its most expensive member', () => {
    const query = `{ search(text: "a") {
      __typename
      ... on Contact { id }
      ... on Task { id title contact { name } }
    } }`;
    expect(cost(query)).toBe(1 * (1 + 4));
  });

  test('the named operation is the one counted', () => {
    const query = `
      query Small { version }
      query Big { contacts(first: 100) { edges { node { id } } } }
    `;
    expect(cost(query, { operationName: 'Big' })).toBe(200);
    expect(cost(query, { operationName: 'Small' })).toBe(1);
  });

  test('a document with several operations and no operation name costs nothing', () => {
    expect(cost('query A { version } query B { version }')).toBe(0);
  });

  test('introspection fields count like any other field', () => {
    expect(cost('{ __schema { types { name } } __type(name: "Contact") { name } }')).toBe(3);
  });

  test('a fragment that spreads itself is expanded only once', () => {
    const query = `
      { contactPage(limit: 10) { items { ...A } } }
      fragment A on Contact { id ...B }
      fragment B on Contact { name ...A tasks(first: 2) { contact { ...A } } }
    `;
    expect(cost(query)).toBe(10 * (1 + 1 + 1 + 2 * (1 + 0)));
  });
});

function testYoga(options: { limit?: number } = {}) {
  const calls: string[] = [];
  const contact = { id: 'c1', name: 'Ada', identities: [], tasks: [] };
  const yoga = createYoga({
    schema: createSchema({
      typeDefs,
      resolvers: {
        Query: {
          version: () => {
            calls.push('version');
            return '1.0.0';
          },
          contacts: () => {
            calls.push('contacts');
            return { edges: [{ cursor: 'a', node: contact }], pageInfo: { hasNextPage: false } };
          },
        },
        Subscription: {
          contactsChanged: {
            subscribe: async function* () {
              calls.push('contactsChanged');
              yield { contactsChanged: [contact] };
            },
          },
        },
        Node: { __resolveType: () => 'Contact' },
        SearchHit: { __resolveType: () => 'Contact' },
      },
    }),
    plugins: [useComplexityLimit({ ...options, defaultPageSize: 50, retryAfterSeconds: 30 })],
    logging: false,
  });
  const post = (
    query: string,
    headers: Record<string, string> = {},
    variables?: Record<string, unknown>,
  ) =>
    yoga.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    });
  return { post, calls };
}

const expensive = '{ contacts(first: 200) { edges { node { id tasks(first: 200) { id } } } } }';

describe('useComplexityLimit', () => {
  test('an operation over the limit is answered 429 with Retry-After', async () => {
    const { post } = testYoga();
    const response = await post(expensive);
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('30');
  });

  test('an operation over the limit is refused with reason, meta and no data', async () => {
    const { post } = testYoga();
    const body = await (await post(expensive)).json();
    expect(body).toEqual({
      data: null,
      errors: [
        {
          message: 'operation has complexity 80400, which exceeds the limit of 2500',
          extensions: {
            code: 'COMPLEXITY_LIMIT_EXCEEDED',
            reason: 'complexity_limit_exceeded',
            meta: { complexity: 80400, limit: 2500 },
          },
        },
      ],
    });
  });

  test('one query text is judged by each request’s own variables (its cost is remembered per variables)', async () => {
    const { post } = testYoga();
    const query =
      'query ($n: Int) { contacts(first: $n) { edges { node { id tasks(first: 200) { id } } } } }';
    for (const [n, status] of [
      [1, 200],
      [200, 429],
      [1, 200],
      [2, 200],
      [200, 429],
    ] as const) {
      expect({ n, status: (await post(query, {}, { n })).status }).toEqual({ n, status });
    }
  });

  test('a file among the variables is a leaf: neither its contents nor its JSON are read', () => {
    // An upload's file holds its bytes; walking or stringifying them cost ~50 bytes a byte.
    class Upload {
      constructor() {
        Object.defineProperty(this, 'bytes', {
          enumerable: true,
          get: () => {
            throw new Error('the file was walked');
          },
        });
      }
      toJSON(): never {
        throw new Error('the file was stringified');
      }
    }
    const check = complexityCheck({ limit: 10, defaultPageSize: 50, retryAfterSeconds: 30 });
    const document = parse('query ($id: ID!) { contact(id: $id) { id } }');
    for (let i = 0; i < 2; i += 1) {
      expect(check({ schema, document, variableValues: { id: new Upload() } })).toBeUndefined();
    }
    // A list of files costs what a list of as many strings costs.
    const refused = complexityCheck({ limit: 1, defaultPageSize: 50, retryAfterSeconds: 30 });
    const query = 'query ($id: ID!) { contact(id: $id) { id } }';
    expect(
      refused({ schema, document, variableValues: { id: [new Upload()] } })?.errors?.[0],
    ).toMatchObject({
      extensions: { meta: { complexity: cost(query, { variables: { id: ['x'] } }), limit: 1 } },
    });
  });

  test('an operation over the limit runs no resolver', async () => {
    const { post, calls } = testYoga();
    await post(expensive);
    expect(calls).toEqual([]);
  });

  test('an operation within the limit executes', async () => {
    const { post, calls } = testYoga();
    const response = await post('{ version contacts(first: 10) { edges { node { name } } } }');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      data: { version: '1.0.0', contacts: { edges: [{ node: { name: 'Ada' } }] } },
    });
    expect(calls).toEqual(['version', 'contacts']);
  });

  test('the limit option replaces the default of 2500', async () => {
    const { post } = testYoga({ limit: 10 });
    const body = await (await post('{ contacts(first: 10) { edges { node { id } } } }')).json();
    expect(body.errors[0].message).toBe(
      'operation has complexity 20, which exceeds the limit of 10',
    );
  });

  test('a subscription over the limit is refused before it starts', async () => {
    const { post, calls } = testYoga({ limit: 10 });
    const response = await post('subscription { contactsChanged(first: 100) { id } }', {
      accept: 'application/json',
    });
    expect(response.status).toBe(429);
    const body = await response.json();
    expect(body.errors[0].extensions.meta).toEqual({ complexity: 200, limit: 10 });
    expect(calls).toEqual([]);
  });
});
