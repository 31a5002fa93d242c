import { describe, expect, test } from '@jest/globals';
import { withoutSuggestions } from '../../src/graph/suggestions.js';
import { useTestService, type GraphBody } from '../support/service.js';

const service = useTestService();

function messages(body: GraphBody): string[] {
  return (body.errors ?? []).map((error) => error.message);
}

// Each probe with what a signed-in caller reads and what an anonymous one reads.
const probes: [string, string, RegExp][] = [
  ['{ contactz }', 'Cannot query field "contactz" on type "Query".', /Did you mean "contact/],
  ['mutation { logi }', 'Cannot query field "logi" on type "Mutation".', /Did you mean "login"/],
  [
    '{ contacts(firts: 1) { pageInfo { hasNextPage } } }',
    'Unknown argument "firts" on field "Query.contacts".',
    /Did you mean "first"\?/,
  ],
];

describe('validation suggestions', () => {
  test.each(probes)(
    'an anonymous %s learns no field names; a signed-in caller gets the suggestion',
    async (query, bare, suggestion) => {
      const anonymous = await service().anonymous(query);
      expect(messages(anonymous.body)).toContain(bare);
      expect(JSON.stringify(anonymous.body)).not.toMatch(/Did you mean/);

      const signedIn = await service().graph(query);
      expect(messages(signedIn.body).some((message) => suggestion.test(message))).toBe(true);
    },
  );

  test('an anonymous caller learns no input field or enum value from a variable it sends', async () => {
    const field = 'mutation ($c: CreateContactInput!) { createContact(input: $c) { id } }';
    const order = 'query ($o: ContactOrder) { contactPage(orderBy: $o) { total } }';
    for (const [query, variables, bare, suggestion] of [
      [field, { c: { namz: 'x' } }, /"namz" is not defined/, /Did you mean "name"/],
      [order, { o: 'NAMES' }, /"NAMES" does not exist/, /Did you mean the enum value "NAME"/],
    ] as const) {
      const anonymous = await service().anonymous(query, variables);
      expect(messages(anonymous.body).join(' ')).toMatch(bare);
      expect(JSON.stringify(anonymous.body)).not.toMatch(/Did you mean/);

      const signedIn = await service().graph(query, variables);
      expect(messages(signedIn.body).join(' ')).toMatch(suggestion);
    }
  });

  test('the cached validation of one text serves each caller its own answer, in either order', async () => {
    // Texts no other test sends, so neither is cached yet.
    const first = '{ contactz version }';
    const second = '{ version contactz }';
    const a1 = await service().anonymous(first);
    const s1 = await service().graph(first);
    const s2 = await service().graph(second);
    const a2 = await service().anonymous(second);
    const s3 = await service().graph(first);
    const a3 = await service().anonymous(second);
    for (const body of [a1.body, a2.body, a3.body]) {
      expect(JSON.stringify(body)).not.toMatch(/Did you mean/);
      expect(messages(body)).toContain('Cannot query field "contactz" on type "Query".');
    }
    for (const body of [s1.body, s2.body, s3.body]) {
      expect(messages(body).some((message) => /Did you mean "contact/.test(message))).toBe(true);
    }
  });

  test.each([
    [
      'Cannot query field "x" on type "Query". Did you mean "y" or "z"?',
      'Cannot query field "x" on type "Query".',
    ],
    [
      'Value "A" does not exist in "E" enum. Did you mean the enum value "B"?',
      'Value "A" does not exist in "E" enum.',
    ],
    [
      'Cannot query field "x" on type "I". Did you mean to use an inline fragment on "T"?',
      'Cannot query field "x" on type "I".',
    ],
    ['Unknown type "Contac".', 'Unknown type "Contac".'],
  ])('withoutSuggestions(%j)', (message, bare) => {
    expect(withoutSuggestions(message)).toBe(bare);
  });
});
