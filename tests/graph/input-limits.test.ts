// Every graph input is held to its caps before anything runs (docs/limits.md): text with
// a NUL or an unpaired surrogate, text past its cap, lists past theirs and operations
// nested too deep are VALIDATION refusals with a reason and meta, never INTERNAL, and
// nothing of them is stored or logged whole.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'drizzle-orm';
import { DEPTH_MAX, IDENTITIES_PER_CONTACT, TEXT_MAX, TOKENS_MAX } from '../../src/limits.js';
import { LOG_TEXT_MAX } from '../../src/log.js';
import { ADD_IDENTITY, CREATE_CONTACT, createContactVia } from '../support/contacts.js';
import { PASSWORD } from '../support/factories.js';
import { startTestService, type GraphBody, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(() => svc.stop());

const NUL = 'Ada\u0000Lovelace';
const LONE_SURROGATE = 'Ada \ud800 Lovelace';

async function storedContacts(): Promise<number> {
  const [row] = await svc.db.database.sql<{ n: number }[]>`
    select count(*)::int as n from contacts where workspace_id = ${svc.workspace.id}`;
  return row?.n ?? 0;
}

function expectRefusal(body: GraphBody, reason: string, meta: Record<string, unknown> = {}) {
  expect(body.data ?? null).toBeNull();
  expect(body.errors).toHaveLength(1);
  expect(body.errors?.[0]?.extensions).toEqual({ code: 'VALIDATION', reason, meta });
}

describe('text that PostgreSQL cannot store as written', () => {
  test.each([
    ['a NUL character', NUL],
    ['an unpaired surrogate', LONE_SURROGATE],
  ])(
    '%s in a variable is text_invalid, naming the input, and nothing is stored',
    async (_, name) => {
      const before = await storedContacts();
      const { status, body } = await svc.graph(CREATE_CONTACT, { input: { name } });
      expect(status).toBe(200);
      expectRefusal(body, 'text_invalid');
      expect(body.errors?.[0]?.message).toBe('input.name is not valid text');
      expect(body.errors?.[0]?.path).toEqual(['createContact']);
      expect(await storedContacts()).toBe(before);
    },
  );

  test('a NUL character in a literal is text_invalid with the literal located', async () => {
    const { body } = await svc.graph('{\n  contacts(q: "a\\u0000b") { edges { cursor } }\n}');
    expectRefusal(body, 'text_invalid');
    expect(body.errors?.[0]).toMatchObject({
      message: 'q is not valid text',
      path: ['contacts'],
      locations: [{ line: 2, column: 15 }],
    });
  });

  test.each([
    ['an identifier', ADD_IDENTITY, 'identity.identifier'],
    [
      'a task title',
      'mutation ($v: String!) { createTask(input: { title: $v }) { replay } }',
      'input.title',
    ],
    ['a token name', 'mutation ($v: String!) { apiTokenCreate(name: $v) { secret } }', 'name'],
    ['a search', 'query ($v: String) { contactPage(q: $v) { total } }', 'q'],
  ])('a NUL character in %s is text_invalid', async (_, query, name) => {
    const contact = await createContactVia(svc, 'Holder');
    const { body } = await svc.graph(query, {
      v: NUL,
      contactId: contact.id,
      identity: { channel: 'email', identifier: NUL },
    });
    expectRefusal(body, 'text_invalid');
    expect(body.errors?.[0]?.message).toBe(`${name} is not valid text`);
  });

  test("an anonymous login's email with a NUL character is text_invalid, not INTERNAL", async () => {
    const { body } = await svc.anonymous(
      'mutation ($e: String!, $p: String!) { login(email: $e, password: $p) { me { id } } }',
      { e: 'ada\u0000@example.com', p: PASSWORD },
    );
    expectRefusal(body, 'text_invalid');
  });
});

describe('text past its cap', () => {
  test('a contact name of 201 characters is text_too_long with meta.max, inline and as a variable', async () => {
    const name = 'n'.repeat(TEXT_MAX.name + 1);
    const inline = await svc.graph(`mutation { createContact(input: { name: "${name}" }) { id } }`);
    expectRefusal(inline.body, 'text_too_long', { max: TEXT_MAX.name });
    const variable = await svc.graph(CREATE_CONTACT, { input: { name } });
    expectRefusal(variable.body, 'text_too_long', { max: TEXT_MAX.name });
    expect(variable.body.errors?.[0]?.message).toBe('input.name may be at most 200 characters');
  });

  test('a contact name of exactly 200 characters, counted in characters, is stored', async () => {
    const name = '😀'.repeat(TEXT_MAX.name);
    const { body } = await svc.graph(CREATE_CONTACT, { input: { name } });
    expect(body.errors).toBeUndefined();
    expect((body.data?.createContact as { name: string }).name).toBe(name);
  });

  test.each([
    ['identifier', { identity: { channel: 'email', identifier: `${'x'.repeat(1_000_000)}@a.b` } }],
    [
      'originEventId',
      { input: { title: 't', originSource: 's', originEventId: 'x'.repeat(1_000_000) } },
    ],
  ])('a 1 MB %s is text_too_long and the log stays small', async (field, variables) => {
    const contact = await createContactVia(svc, 'Holder');
    const query =
      field === 'identifier'
        ? ADD_IDENTITY
        : 'mutation ($input: CreateTaskInput!) { createTask(input: $input) { replay } }';
    const linesBefore = svc.lines.length;
    const { body } = await svc.graph(query, { contactId: contact.id, ...variables });
    const max = field === 'identifier' ? TEXT_MAX.identifier : TEXT_MAX.origin;
    expectRefusal(body, 'text_too_long', { max });
    const logged = JSON.stringify(svc.lines.slice(linesBefore));
    expect(logged.length).toBeLessThan(20_000);
  });

  test('an account name keeps the spec reason name_too_long', async () => {
    const { body } = await svc.graph(
      'mutation ($n: String!) { invite(email: "longname@example.com", name: $n) { user { id } } }',
      { n: 'n'.repeat(201) },
    );
    expectRefusal(body, 'name_too_long', { max: 200 });
  });

  test('a password past 1024 characters is password_too_long, even at login', async () => {
    const { body } = await svc.anonymous(
      'mutation ($p: String!) { login(email: "a@example.com", password: $p) { me { id } } }',
      { p: 'p'.repeat(1025) },
    );
    expectRefusal(body, 'password_too_long', { max: 1024 });
  });
});

describe('lists', () => {
  test('15,000 identities in one createContact are list_too_long before anything is written', async () => {
    const before = await storedContacts();
    const identities = Array.from({ length: 15_000 }, (_, i) => ({
      channel: 'email',
      identifier: `p${i}@example.com`,
    }));
    const { body } = await svc.graph(CREATE_CONTACT, { input: { name: 'Many', identities } });
    expectRefusal(body, 'list_too_long', { max: 20 });
    expect(body.errors?.[0]?.message).toBe('input.identities may hold at most 20 items');
    expect(await storedContacts()).toBe(before);
  });

  test('a list argument with no declared cap is held to 100 items', async () => {
    const events = Array.from({ length: 101 }, () => 'contact.created');
    const { body } = await svc.graph(
      'mutation ($e: [String!]!) { createWebhook(url: "https://example.com/h", events: $e) { secret } }',
      { e: events },
    );
    expectRefusal(body, 'list_too_long', { max: 100 });
  });

  test(`a contact holds at most ${IDENTITIES_PER_CONTACT} identities, exactly, under concurrent adds`, async () => {
    const identities = Array.from({ length: 20 }, (_, i) => ({
      channel: 'email',
      identifier: `full-${i}@example.com`,
    }));
    const contact = await createContactVia(svc, 'Full', identities);
    for (let start = 20; start < IDENTITIES_PER_CONTACT - 2; start += 1) {
      await svc.graph(ADD_IDENTITY, {
        contactId: contact.id,
        identity: { channel: 'email', identifier: `full-${start}@example.com` },
      });
    }
    const adds = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        svc.graph(ADD_IDENTITY, {
          contactId: contact.id,
          identity: { channel: 'phone', identifier: `+1555000${1000 + i}` },
        }),
      ),
    );
    const refused = adds.filter(
      ({ body }) => body.errors?.[0]?.extensions.reason === 'identities_full',
    );
    expect(refused).toHaveLength(6);
    expect(refused[0]?.body.errors?.[0]?.extensions).toEqual({
      code: 'CONFLICT',
      reason: 'identities_full',
      meta: { max: IDENTITIES_PER_CONTACT },
    });
    const [row] = await svc.db.database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from contact_identities where contact_id = ${contact.id}`,
    );
    expect(row?.n).toBe(IDENTITIES_PER_CONTACT);
  });
});

describe('size and nesting', () => {
  test('brackets nested past the limit are query_too_deep before parsing', async () => {
    const deep = `{ contacts(q: ${'['.repeat(100_000)}"a"${']'.repeat(100_000)}) { edges { cursor } } }`;
    const { status, body } = await svc.graph(deep);
    expect(status).toBe(200);
    expectRefusal(body, 'query_too_deep', { max: DEPTH_MAX });
  });

  test('selections nested past the limit are query_too_deep', async () => {
    const deep = `{ me ${'{ id '.repeat(DEPTH_MAX + 1)}${'}'.repeat(DEPTH_MAX + 1)} }`;
    const { body } = await svc.graph(deep);
    expectRefusal(body, 'query_too_deep', { max: DEPTH_MAX });
  });

  test('a chain of 5,000 fragment spreads is query_too_deep, not a stack overflow', async () => {
    const count = 5_000;
    let query = '{ ...F0 }\n';
    for (let i = 0; i < count; i += 1) {
      query += `fragment F${i} on Query { ${i + 1 < count ? `...F${i + 1}` : 'version'} }\n`;
    }
    const { status, body } = await svc.graph(query);
    expect(status).toBe(200);
    expectRefusal(body, 'query_too_deep', { max: DEPTH_MAX });
  });

  test(`an operation of more than ${TOKENS_MAX} tokens is query_too_large before parsing`, async () => {
    // Three tokens an alias (`a0`, `:`, `version`).
    const aliases = Array.from({ length: TOKENS_MAX / 3 + 1 }, (_, i) => `a${i}: version`);
    const { status, body } = await svc.graph(`{ ${aliases.join(' ')} }`);
    expect(status).toBe(200);
    expectRefusal(body, 'query_too_large', { max: TOKENS_MAX });
  });

  test('an operation within the limits runs', async () => {
    const { body } = await svc.graph('{ me { id } }');
    expect(body.data?.me).toEqual({ id: svc.admin.id });
  });
});

test('no refusal above logged the whole input: every line stays under a few excerpts', () => {
  const longest = Math.max(...svc.lines.map((line) => JSON.stringify(line).length));
  expect(longest).toBeLessThan(LOG_TEXT_MAX * 10);
});
