// The cost model on the service's own schema (docs/limits.md, "What a field costs"): each
// row of the table, and a guard that every field able to run a statement declares a cost.
import { beforeAll, describe, expect, test } from '@jest/globals';
import { isObjectType, parse, type GraphQLSchema } from 'graphql';
import { operationComplexity } from '../../src/graph/complexity.js';
import {
  CHANNEL_FILTER,
  DUPLICATES,
  FILTER_COUNT,
  PASSWORD,
  ROOT_COSTS,
  SEARCH,
  STATEMENT,
  WRITE,
} from '../../src/graph/costs.js';
import { buildSchema } from '../../src/graph/schema.js';
import { loadPlugins } from '../../src/plugin-host/host.js';

let schema: GraphQLSchema;

beforeAll(async () => {
  await loadPlugins({ only: ['note'] });
  schema = buildSchema();
});

function cost(query: string, variables: Record<string, unknown> = {}): number {
  return operationComplexity({
    schema,
    document: parse(query),
    variables,
    defaultPageSize: 50,
    rootCosts: ROOT_COSTS,
  });
}

describe('what a field costs', () => {
  test('a root read pays one statement beside its leaves', () => {
    expect(cost('{ me { id } }')).toBe(STATEMENT + 1);
  });

  test('version, adminSettings and supportedLocales run no statement', () => {
    expect(cost('{ version supportedLocales adminSettings { listPageSize } }')).toBe(1 + 1 + 1);
  });

  test('a search pays SEARCH; a blank q is no search', () => {
    const page = '{ edges { node { id } } }';
    expect(cost(`{ contacts(q: "ada", first: 10) ${page} }`)).toBe(STATEMENT + SEARCH + 20);
    expect(cost(`{ contacts(q: "  ", first: 10) ${page} }`)).toBe(STATEMENT + 20);
  });

  test("a page's total is a stored count unfiltered and a count of every match filtered", () => {
    expect(cost('{ contactPage(limit: 1) { total } }')).toBe(STATEMENT + STATEMENT + 1);
    expect(cost('query ($q: String) { contactPage(q: $q, limit: 1) { total } }', { q: 'a' })).toBe(
      STATEMENT + SEARCH + FILTER_COUNT + 1,
    );
  });

  test('a channel filter pays its walk, its count, and one point a listed channel', () => {
    expect(cost('{ contactPage(channels: ["email", "phone"], limit: 1) { total } }')).toBe(
      STATEMENT + CHANNEL_FILTER + 2 + FILTER_COUNT + 1,
    );
  });

  test('contactDuplicates pays its lookup once and its rows as a list of first', () => {
    const id = '00000000-0000-4000-8000-000000000000';
    expect(cost(`{ contactDuplicates(id: "${id}") { score contact { id } } }`)).toBe(
      DUPLICATES + 10 * (1 + 2),
    );
    expect(cost(`{ contactDuplicates(id: "${id}", first: 3) { score } }`)).toBe(
      DUPLICATES + 3 * (1 + 1),
    );
  });

  test('signing in pays a write and a password check', () => {
    expect(cost('mutation { login(email: "a", password: "b") { me { id } } }')).toBe(
      WRITE + PASSWORD + 1,
    );
  });

  test('createContact pays a write for the contact and one for each identity (and its item)', () => {
    const query = `mutation ($i: CreateContactInput!) { createContact(input: $i) { id } }`;
    const identities = [1, 2, 3].map((n) => ({ channel: 'email', identifier: `${n}@x.y` }));
    expect(cost(query, { i: { name: 'A', identities } })).toBe(WRITE * 4 + 3 + 1);
  });

  test('every other mutation pays one write', () => {
    expect(cost('mutation { logout }')).toBe(WRITE + 1);
  });

  test('a batched field a plugin adds to a core type pays only its rows', () => {
    expect(cost('{ contactPage(limit: 10) { items { notes(first: 5) { id } } } }')).toBe(
      STATEMENT + 10 * (1 + 5 * 2),
    );
  });

  test('Webhook.deliveries pays a statement for each webhook', () => {
    expect(cost('{ webhooks(first: 10) { edges { node { deliveries(first: 5) { id } } } } }')).toBe(
      STATEMENT + 10 * (1 + STATEMENT + 5 * 2),
    );
  });

  test('a list argument pays one point an item', () => {
    expect(cost('mutation { createWebhook(url: "u", events: ["a", "b", "c"]) { secret } }')).toBe(
      WRITE + 3 + 1,
    );
  });
});

test('every field outside the root types that takes arguments declares what it costs', () => {
  const undeclared: string[] = [];
  const roots = new Set([
    schema.getQueryType(),
    schema.getMutationType(),
    schema.getSubscriptionType(),
  ]);
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || roots.has(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const declared = (field.extensions as { complexity?: { cost?: unknown } }).complexity?.cost;
      if (field.args.length > 0 && declared === undefined)
        undeclared.push(`${type.name}.${field.name}`);
    }
  }
  expect(undeclared).toEqual([]);
});
