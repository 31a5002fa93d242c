import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { CREATE_CONTACT } from '../support/contacts.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(() => svc.stop());

/** The keys of every object in an answer, in the order they were written. */
function keyOrder(json: string): string[][] {
  const orders: string[][] = [];
  JSON.parse(json, function (this: Record<string, unknown>, key, value: unknown) {
    if (value && typeof value === 'object' && !Array.isArray(value))
      orders.push(Object.keys(value));
    return value;
  });
  return orders;
}

test('an answer’s keys come in the query’s order, whichever field resolves first', async () => {
  const response = await svc.request(`/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...svc.adminHeaders },
    body: JSON.stringify({ query: '{ me { email } version }' }),
  });
  expect(keyOrder(await response.text())).toContainEqual(['me', 'version']);
});

test('nested objects keep the query’s order too, through aliases and fragments', async () => {
  const { body } = await svc.graph(CREATE_CONTACT, {
    input: {
      name: 'Ada Order',
      identities: [{ channel: 'email', identifier: 'ada@order.example' }],
    },
  });
  const id = (body.data?.createContact as { id: string }).id;
  const query = `query ($id: UUID!) {
    contact(id: $id) { identities { identifier } ...Rest alias: name }
    version
  }
  fragment Rest on Contact { tasks { id } id }`;
  const response = await svc.request(`/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...svc.adminHeaders },
    body: JSON.stringify({ query, variables: { id } }),
  });
  const orders = keyOrder(await response.text());
  expect(orders).toContainEqual(['identities', 'tasks', 'id', 'alias']);
  expect(orders).toContainEqual(['contact', 'version']);
});
