// contactDuplicates (issue 28): the contacts that look like the same person as one, by a
// shared address, a number's digits or a very similar name; best first, bounded, in one
// workspace.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { drizzle } from 'drizzle-orm/postgres-js';
import { randomUUID } from 'node:crypto';
import type { Context } from '../../src/context.js';
import { contactLoaders } from '../../src/contacts/loaders.js';
import { contactDuplicates } from '../../src/contacts/service.js';
import { RequestLoaders } from '../../src/loaders.js';
import { DUPLICATES_MAX } from '../../src/limits.js';
import {
  createContactVia,
  dataOf,
  expectReason,
  freshWorkspaceHeaders,
  type IdentityInputData,
} from '../support/contacts.js';
import { startTestService, testConfig, type TestService } from '../support/service.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(() => svc.stop());

const DUPLICATES = `query ($id: UUID!, $first: Int) {
  contactDuplicates(id: $id, first: $first) {
    contact { id name identities { channel identifier } }
    score signals nameSimilarity
  }
}`;

interface Duplicate {
  contact: { id: string; name: string; identities: { channel: string; identifier: string }[] };
  score: number;
  signals: string[];
  nameSimilarity: number;
}

type Headers = Record<string, string>;

async function duplicatesOf(id: string, headers: Headers, first?: number): Promise<Duplicate[]> {
  const { body } = await svc.graph(DUPLICATES, { id, first }, headers);
  return dataOf<Duplicate[]>(body, 'contactDuplicates');
}

/** A contact of the workspace `headers` names; answers its id. */
async function contact(
  name: string,
  headers: Headers,
  ...identities: IdentityInputData[]
): Promise<string> {
  return (await createContactVia(svc, name, identities, headers)).id;
}

const email = (identifier: string) => ({ channel: 'email', identifier });
const phone = (identifier: string) => ({ channel: 'phone', identifier });

describe('contactDuplicates', () => {
  let headers: Headers;

  beforeAll(async () => {
    ({ headers } = await freshWorkspaceHeaders(svc));
    // Names unlike each other (and unlike every other contact here) unless a test says.
    for (const name of ['Quentin Vasquez', 'Beatrix Oyelaran', 'Ignatius Pemberton']) {
      await contact(name, headers);
    }
  });

  test('an address normalised (case, +tag) on another contact is an IDENTIFIER', async () => {
    const ana = await contact('Ana Lopez', headers, email('Ana.Lopez+crm@Example.com'));
    const other = await contact('A. L.', headers, email('ana.lopez@example.COM'));
    await contact('Unrelated Person', headers, email('ana.lopez@example.org'));
    const found = await duplicatesOf(ana, headers);
    expect(found.map((d) => d.contact.id)).toEqual([other]);
    expect(found[0]?.signals).toEqual(['IDENTIFIER']);
    expect(found[0]?.score).toBeCloseTo(0.9, 6);
    // And the other way round.
    expect((await duplicatesOf(other, headers)).map((d) => d.contact.id)).toEqual([ana]);
  });

  test('an address on another channel than email counts the same', async () => {
    // A plugin's channel is not writable through the graph: the identity is written as a
    // chat platform's would be.
    const { workspaceId: ws, headers: own } = await freshWorkspaceHeaders(svc);
    const bea = await contact('Bea Ortiz', own, email('bea@ortiz.example'));
    const chatOne = await contact('bea_o', own);
    await svc.db.database.sql`insert into contact_identities
      (workspace_id, contact_id, channel, identifier, identifier_key)
      values (${ws}, ${chatOne}, 'chat', 'BEA@ortiz.example', 'BEA@ortiz.example')`;
    const found = await duplicatesOf(bea, own);
    expect(found.map((d) => [d.contact.id, d.signals])).toEqual([[chatOne, ['IDENTIFIER']]]);
  });

  test('the same digits written differently are PHONE_DIGITS, on any channel', async () => {
    const { workspaceId: ws, headers: own } = await freshWorkspaceHeaders(svc);
    const uk = await contact('Priya Shah', own, phone('+44 7700 900123'));
    const national = await contact('P Shah mobile', own, phone('07700 900123'));
    const dotted = await contact('Shah household', own, phone('0044 7700-900-123'));
    const fromChat = await contact('priya', own);
    await svc.db.database.sql`insert into contact_identities
      (workspace_id, contact_id, channel, identifier, identifier_key)
      values (${ws}, ${fromChat}, 'chat', '447700900123', '447700900123')`;
    // Other numbers: a different ending, too few digits, a handle that is not a number.
    await contact('Not Her', own, phone('+44 7700 900124'));
    await contact('Short', own, phone('900123'));
    const found = await duplicatesOf(uk, own);
    expect(new Set(found.map((d) => d.contact.id))).toEqual(new Set([national, dotted, fromChat]));
    for (const d of found) {
      expect(d.signals).toEqual(['PHONE_DIGITS']);
      expect(d.score).toBeCloseTo(0.8, 6);
    }
  });

  test('a very similar name is NAME with its similarity; a merely related one is not', async () => {
    const jon = await contact('Jonathan Whitfield', headers);
    const typo = await contact('Jonathan Whitfeld', headers);
    const upper = await contact('JONATHAN  WHITFIELD', headers);
    await contact('Jonathan Brown', headers);
    await contact('Whitfield Logistics Ltd', headers);
    const found = await duplicatesOf(jon, headers);
    expect(found.map((d) => d.contact.id)).toEqual([upper, typo]);
    const [exact, near] = found as [Duplicate, Duplicate];
    expect(exact.signals).toEqual(['NAME']);
    expect(exact.nameSimilarity).toBeGreaterThan(near.nameSimilarity);
    expect(near.nameSimilarity).toBeGreaterThanOrEqual(0.6);
    expect(near.score).toBeCloseTo(0.7 * near.nameSimilarity, 6);
  });

  test('never the contact itself, and none at all for a contact like no other', async () => {
    const lone = await contact('Xavier Quillfeather', headers, email('xq@lone.example'));
    expect(await duplicatesOf(lone, headers)).toEqual([]);
  });

  test('best first: signals add up, ties by name then id', async () => {
    const { headers: own } = await freshWorkspaceHeaders(svc);
    const target = await contact(
      'Maria Gonzalez',
      own,
      email('maria@g.example'),
      phone('+34 600 111 222'),
    );
    const all = await contact(
      'Maria Gonzales',
      own,
      email('Maria+work@G.example'),
      phone('600 111 222'),
    );
    const mail = await contact('M. G.', own, email('maria+shop@g.example'));
    const tel = await contact('Home', own, phone('0034 600-111-222'));
    const telB = await contact('Abode', own, phone('34 600 111 222'));
    const named = await contact('MARIA GONZALEZ', own);
    const found = await duplicatesOf(target, own);
    expect(found.map((d) => d.contact.id)).toEqual([all, mail, telB, tel, named]);
    expect(found[0]?.signals).toEqual(['IDENTIFIER', 'PHONE_DIGITS', 'NAME']);
    const scores = found.map((d) => d.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(found[2]?.score).toBe(found[3]?.score); // Abode before Home: by name
  });

  test('bounded: first picks how many, at most DUPLICATES_MAX; outside is refused', async () => {
    const { headers: own } = await freshWorkspaceHeaders(svc);
    const target = await contact('Shared Inbox', own, email('team@bound.example'));
    for (let i = 0; i < DUPLICATES_MAX + 2; i += 1) {
      await contact(`Person ${i}`, own, email(`team+${i}@bound.example`));
    }
    expect(await duplicatesOf(target, own)).toHaveLength(10);
    expect(await duplicatesOf(target, own, 3)).toHaveLength(3);
    expect(await duplicatesOf(target, own, DUPLICATES_MAX)).toHaveLength(DUPLICATES_MAX);
    for (const first of [0, DUPLICATES_MAX + 1]) {
      const { body } = await svc.graph(DUPLICATES, { id: target, first }, own);
      expectReason(body, 'VALIDATION', 'first_out_of_range', { min: 1, max: DUPLICATES_MAX });
    }
  });

  test("another workspace's contact is NOT_FOUND and its contacts never appear", async () => {
    const mine = await contact('Yolanda Featherstone', headers, email('yolanda@shared.example'));
    const { headers: theirs } = await freshWorkspaceHeaders(svc);
    const twin = await contact('Yolanda Featherstone', theirs, email('yolanda@shared.example'));
    expect(await duplicatesOf(mine, headers)).toEqual([]);
    expect(await duplicatesOf(twin, theirs)).toEqual([]);
    for (const id of [twin, randomUUID()]) {
      const { body } = await svc.graph(DUPLICATES, { id }, headers);
      expectReason(body, 'NOT_FOUND', 'contact_not_found');
    }
    await expectAnsweredAsUnknown(
      svc,
      'contactDuplicates(id)',
      DUPLICATES,
      (id) => ({ id }),
      twin,
      headers,
    );
  });

  test('needs contacts:read', async () => {
    const id = await contact('Scoped Reader', headers);
    const { headers: readOnly } = await freshWorkspaceHeaders(svc, ['contacts:read']);
    const { body: allowed } = await svc.graph(DUPLICATES, { id: randomUUID() }, readOnly);
    expectReason(allowed, 'NOT_FOUND', 'contact_not_found');
    const { headers: tasksOnly } = await freshWorkspaceHeaders(svc, ['tasks:read']);
    const { body } = await svc.graph(DUPLICATES, { id }, tasksOnly);
    expectReason(body, 'UNAUTHORIZED', 'scope_missing', { scope: 'contacts:read' });
  });

  test('one statement finds and scores them; their identities load in one more', async () => {
    const { workspaceId: ws, headers: own } = await freshWorkspaceHeaders(svc);
    const target = await contact('Olu Adebayo', own, email('olu@many.example'));
    for (let i = 0; i < 5; i += 1) {
      await contact(
        `Olu ${i}`,
        own,
        email(`olu+${i}@many.example`),
        phone(`+1 555 010 ${1000 + i}`),
      );
    }
    const statements: string[] = [];
    const logged = drizzle(svc.db.database.sql, {
      casing: 'snake_case',
      logger: { logQuery: (query) => void statements.push(query) },
    });
    const ctx = {
      database: { ...svc.db.database, db: logged },
      config: testConfig(),
      workspaceId: ws,
      actor: { workspaceId: ws, userId: svc.admin.id },
      loaders: new RequestLoaders(logged, ws),
    } as unknown as Context;
    const found = await contactDuplicates(ctx, { id: target });
    expect(statements).toHaveLength(1);
    expect(found).toHaveLength(5);
    const loader = ctx.loaders.of(contactLoaders).identities;
    const identities = await Promise.all(found.map((d) => loader.load(d.contact.id)));
    expect(statements).toHaveLength(2);
    expect(identities.map((list) => list.length)).toEqual([2, 2, 2, 2, 2]);
  });
});
