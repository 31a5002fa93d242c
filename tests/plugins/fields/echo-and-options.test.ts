// What a refusal repeats of its input is bounded and clean (issue 26, found on the way),
// and select options are compared as docs/fields.md says: composed (NFC) for values,
// compatibility forms and case folded (NFKC, lower case) for telling two options apart.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createContactVia, dataOf, expectReason } from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { DEFINE, READ, WRITE, fieldInput, type FieldData } from './support.js';

let svc: TestService;
let contactId: string;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
  contactId = (await createContactVia(svc, 'Ada Lovelace')).id;
});

afterAll(() => svc.stop());

const write = async (values: unknown) => (await svc.graph(WRITE, { contactId, values })).body;
const define = async (name: string, options: string[]) =>
  (await svc.graph(DEFINE, { input: fieldInput(name, 'select', { options }) })).body;

describe('field_unknown', () => {
  test('repeats a 3,000-character key cut short', async () => {
    const body = await write({ ['k'.repeat(3000)]: 1 });
    expect(body.errors?.[0]?.extensions.reason).toBe('field_unknown');
    const message = body.errors![0]!.message;
    expect(message.length).toBeLessThanOrEqual(500);
    expect(message).toBe(`no field named ${'k'.repeat(100)}…`);
    const [echoed] = body.errors![0]!.extensions.meta!.fields as string[];
    expect(echoed).toBe(`${'k'.repeat(100)}…`);
  });

  test('a key holding a NUL is refused as invalid text, never repeated raw', async () => {
    const body = await write({ 'a\u0000b': 1 });
    expectReason(body, 'VALIDATION', 'text_invalid');
    expect(body.errors![0]!.message).toBe('values is not valid text');
  });

  test('a key with control characters and a lone surrogate comes back escaped', async () => {
    const body = await write({ 'a\u0007b\ud800c': 1 });
    // The lone surrogate is refused by the input rule; a bell alone is valid text.
    expectReason(body, 'VALIDATION', 'text_invalid');
    const bell = await write({ 'a\u0007b': 1 });
    expect(bell.errors?.[0]?.message).toBe('no field named a\\u0007b');
    expect(bell.errors?.[0]?.extensions.meta).toEqual({ fields: ['a\\u0007b'] });
  });
});

describe('select options', () => {
  test.each([
    ['case', ['Gold', 'gold']],
    ['a compatibility form (fullwidth)', ['a', '\uff41']],
    ['canonical equivalence (e + combining acute)', ['\u00e9', 'e\u0301']],
  ])('two options differing only by %s are refused', async (_name, options) => {
    const body = await define(`tier${Math.random().toString(36).slice(2, 8)}`, options);
    expectReason(body, 'VALIDATION', 'field_option_invalid', {
      option: options[1]!.normalize('NFC'),
    });
  });

  test('Latin a and Cyrillic а are two options (docs/decisions.md)', async () => {
    const field = dataOf<FieldData>(await define('script', ['a', '\u0430']), 'defineField');
    expect(field.options).toEqual(['a', '\u0430']);
    dataOf(await write({ script: '\u0430' }), 'writeContactFields');
    const { body } = await svc.graph(READ, { id: contactId, name: 'script' });
    expect(dataOf<{ field: unknown }>(body, 'contact').field).toBe('\u0430');
  });

  test('options are stored composed, and a value typed decomposed matches', async () => {
    const field = dataOf<FieldData>(await define('accent', ['Caf\u0065\u0301']), 'defineField');
    expect(field.options).toEqual(['Caf\u00e9']);
    dataOf(await write({ accent: 'Caf\u0065\u0301' }), 'writeContactFields');
    const { body } = await svc.graph(READ, { id: contactId, name: 'accent' });
    expect(dataOf<{ field: unknown }>(body, 'contact').field).toBe('Caf\u00e9');
  });
});
