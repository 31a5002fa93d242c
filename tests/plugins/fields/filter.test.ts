// contactPage's `field` condition: equality by kind, a multi_select's option, a text
// fragment; its total, its refusals, its cost, its indexes, and another workspace's values.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  createContactVia,
  dataOf,
  expectReason,
  freshWorkspaceHeaders,
} from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { DEFINE, WRITE, fieldInput, type FieldData } from './support.js';

let svc: TestService;
let headers: Record<string, string>;
let workspaceId: string;
const ids: Record<string, string> = {};

const PAGE = `query ($field: FieldCondition!) {
  contactPage(field: $field, limit: 50) { total items { name } }
}`;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
  ({ headers, workspaceId } = await freshWorkspaceHeaders(svc));
  for (const input of [
    fieldInput('industry', 'select', { options: ['Retail', 'Energy'] }),
    fieldInput('tags', 'multi_select', { options: ['a', 'b'] }),
    fieldInput('vip', 'boolean'),
    fieldInput('employees', 'number'),
    fieldInput('renewsOn', 'date'),
    fieldInput('headline', 'text'),
    fieldInput('addresses', 'repeater', {
      subFields: [{ name: 'street', label: 'Street', kind: 'text' }],
    }),
  ]) {
    dataOf<FieldData>((await svc.graph(DEFINE, { input }, headers)).body, 'defineField');
  }
  const people: [string, Record<string, unknown>][] = [
    [
      'Ada',
      { industry: 'Energy', tags: ['a'], vip: true, employees: 12, headline: 'Chief Engineer' },
    ],
    [
      'Bea',
      {
        industry: 'Retail',
        tags: ['a', 'b'],
        vip: false,
        employees: '12.0',
        renewsOn: '2027-01-31',
      },
    ],
    ['Cy', { industry: 'Energy', tags: ['b'], headline: 'engineering lead' }],
    ['Dee', {}],
  ];
  for (const [name, values] of people) {
    ids[name] = (await createContactVia(svc, name, [], headers)).id;
    const { body } = await svc.graph(WRITE, { contactId: ids[name], values }, headers);
    dataOf(body, 'writeContactFields');
  }
  // Another workspace holding the same field name and value: never matched from here.
  const other = await freshWorkspaceHeaders(svc);
  await svc.graph(
    DEFINE,
    { input: fieldInput('industry', 'select', { options: ['Energy'] }) },
    other.headers,
  );
  const stranger = (await createContactVia(svc, 'Stranger', [], other.headers)).id;
  await svc.graph(WRITE, { contactId: stranger, values: { industry: 'Energy' } }, other.headers);
});

afterAll(() => svc.stop());

async function page(field: Record<string, unknown>) {
  const { body } = await svc.graph(PAGE, { field }, headers);
  return body;
}

async function names(field: Record<string, unknown>) {
  const result = dataOf<{ total: number; items: { name: string }[] }>(
    await page(field),
    'contactPage',
  );
  expect(result.total).toBe(result.items.length);
  return result.items.map((item) => item.name);
}

describe('contactPage(field:)', () => {
  test.each([
    [{ name: 'industry', equals: 'Energy' }, ['Ada', 'Cy']],
    [{ name: 'tags', equals: 'b' }, ['Bea', 'Cy']],
    [{ name: 'vip', equals: false }, ['Bea']],
    [{ name: 'employees', equals: '12' }, ['Ada', 'Bea']],
    [{ name: 'employees', equals: 12.0 }, ['Ada', 'Bea']],
    [{ name: 'renewsOn', equals: '2027-01-31' }, ['Bea']],
    [{ name: 'headline', contains: 'ENGINEER' }, ['Ada', 'Cy']],
    [{ name: 'headline', contains: '100%' }, []],
    [{ name: 'headline', equals: 'chief engineer' }, []],
  ])('%j keeps %j, counted in total', async (field, expected) => {
    expect(await names(field)).toEqual(expected);
  });

  test('combines with the other filters', async () => {
    const { body } = await svc.graph(
      `query ($field: FieldCondition!) { contactPage(q: "ada", field: $field) { total items { name } } }`,
      { field: { name: 'industry', equals: 'Energy' } },
      headers,
    );
    expect(dataOf(body, 'contactPage')).toEqual({ total: 1, items: [{ name: 'Ada' }] });
  });

  test('an unknown field is field_unknown; a value of another kind value_kind_mismatch', async () => {
    expectReason(await page({ name: 'colour', equals: 'red' }), 'VALIDATION', 'field_unknown', {
      fields: ['colour'],
    });
    expectReason(
      await page({ name: 'industry', equals: 'Mining' }),
      'VALIDATION',
      'value_kind_mismatch',
      { field: 'industry', kind: 'select' },
    );
    expectReason(
      await page({ name: 'employees', equals: 'many' }),
      'VALIDATION',
      'value_kind_mismatch',
      { field: 'employees', kind: 'number' },
    );
  });

  test('exactly one of equals and contains, contains on text kinds, never a repeater', async () => {
    for (const field of [
      { name: 'industry' },
      { name: 'headline', equals: 'x', contains: 'x' },
      { name: 'employees', contains: '12' },
      { name: 'addresses', equals: 'x' },
    ]) {
      expectReason(await page(field), 'VALIDATION', 'field_condition_invalid', {
        field: field.name,
      });
    }
  });

  test('a fragment costs a search; an equality an indexed filter', async () => {
    const bomb = (field: string) =>
      `{ ${Array.from({ length: 5 }, (_, i) => `p${i}: contactPage(limit: 1, field: ${field}) { items { name } }`).join(' ')} }`;
    const searches = await svc.graph(bomb('{ name: "headline", contains: "eng" }'), {}, headers);
    expect(searches.body.errors?.[0]?.extensions.reason).toBe('complexity_limit_exceeded');
    const equalities = await svc.graph(bomb('{ name: "vip", equals: true }'), {}, headers);
    expect(equalities.body.errors).toBeUndefined();
  });

  test('both conditions can be served by the values table’s indexes', async () => {
    const plan = async (query: string, ...params: string[]) =>
      svc.db.database.sql.begin(async (tx) => {
        await tx`set local enable_seqscan = off`;
        const rows = await tx.unsafe(`explain ${query}`, params);
        return rows.map((row) => Object.values(row)[0]).join('\n');
      });
    const field = `(select id from field_definitions where workspace_id = $1 and name = 'industry')`;
    expect(
      await plan(
        `select contact_id from contact_field_values where workspace_id = $1
         and field_id = ${field} and md5(value::text) = md5('"Energy"'::jsonb::text)`,
        workspaceId,
      ),
    ).toContain('contact_field_values_value_idx');
    // A fragment is found through trigrams (the planner adds the field once it is selective).
    expect(
      await plan(`select contact_id from contact_field_values where search like '%engineer%'`),
    ).toContain('contact_field_values_search_idx');
  });
});
