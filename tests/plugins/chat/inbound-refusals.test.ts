// Poison items in a signed payload (issue 26, item 4): what can be stored is stored, what
// cannot is recorded with its reason for an admin, the payload is answered 200 so the
// platform stops delivering it, and one payload holds no transaction past one batch.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { runHousekeeping } from '../../../src/auth/housekeeping.js';
import {
  BATCH_ITEMS,
  EARLY_STATUSES_MAX,
  PAYLOAD_ITEMS_MAX,
} from '../../../plugins/chat/inbound.js';
import { batch, inboundMessage, messageId, statusUpdate } from '../../support/chat-platform.js';
import { dataOf } from '../../support/contacts.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../../support/factories.js';
import { captureLogger, testConfig } from '../../support/service.js';
import { NUMBER, startChatHarness, type ChatHarness } from './support.js';

let h: ChatHarness;

beforeAll(async () => {
  // Room for a 20,000-message body: the payload cap, not the body cap, is under test.
  h = await startChatHarness({ env: { SVC_GRAPH_UPLOAD_MAX_BYTES: '67108864' } });
});

afterAll(() => h.stop());

let senders = 0;
const sender = () => `1777${String((senders += 1)).padStart(7, '0')}`;

const text = (from: string, body: string, id = messageId()) =>
  inboundMessage({
    phoneNumberId: NUMBER,
    from,
    profileName: 'Ada',
    type: 'text',
    text: { body },
    id,
  });

const REFUSED = `query ($first: Int) {
  chatRefusedInbound(first: $first) { kind platformId peer reason detail at }
}`;

interface Refused {
  kind: string;
  platformId: string;
  peer: string;
  reason: string;
  detail: string;
}

async function refused(headers?: Record<string, string>): Promise<Refused[]> {
  const { body } = await h.svc.graph(REFUSED, { first: 200 }, headers);
  return dataOf<Refused[]>(body, 'chatRefusedInbound');
}

async function storedIds(ids: string[]): Promise<string[]> {
  const rows = await h.svc.db.database.sql<{ external_id: string }[]>`
    select external_id from chat_messages where external_id = any(${ids}) order by external_id`;
  return rows.map((row) => row.external_id);
}

const sql = () => h.svc.db.database.sql;

describe('a poison message', () => {
  test.each([
    ['a NUL in its text', () => text(sender(), 'a\u0000b'), 'text_invalid', 'text.body'],
    ['a lone surrogate in its text', () => text(sender(), 'a\ud800b'), 'text_invalid', 'text.body'],
    ['a 10,000-digit sender', () => text('9'.repeat(10_000), 'hello'), 'text_too_long', 'from'],
  ])('with %s is answered 200 and recorded with its reason', async (_name, make, reason, at) => {
    const payload = make();
    const id = payload.entry[0]!.changes[0]!.value.messages![0]!.id;
    expect(await h.deliver(payload)).toEqual({ status: 200, text: '' });
    expect(await storedIds([id])).toEqual([]);
    const record = (await refused()).find((row) => row.platformId === id);
    expect(record).toMatchObject({ kind: 'message', reason, detail: at });
    expect(record!.peer.length).toBeLessThanOrEqual(201);
  });

  test('leaves the good messages of its payload stored; a redelivery changes nothing', async () => {
    const [good1, bad, good2] = [messageId(), messageId(), messageId()];
    const payload = batch(
      text(sender(), 'first', good1),
      text(sender(), 'poison \u0000', bad),
      text(sender(), 'second', good2),
    );
    expect((await h.deliver(payload)).status).toBe(200);
    expect(await storedIds([good1, bad, good2])).toEqual([good1, good2].sort());
    expect((await refused()).filter((row) => row.platformId === bad)).toHaveLength(1);
    // The platform delivers again (say a 500 reached it from elsewhere): stored once each.
    expect((await h.deliver(payload)).status).toBe(200);
    const [stored] = await sql()<{ n: number }[]>`
      select count(*)::int as n from chat_messages where external_id in (${good1}, ${good2})`;
    expect(stored!.n).toBe(2);
    const [recorded] = await sql()<{ r: number }[]>`
      select count(*)::int as r from chat_refused_inbound where platform_id = ${bad}`;
    expect(recorded!.r).toBe(1);
  });

  test('refused by the contacts, not the text rule, takes none of its batch with it', async () => {
    const [good1, blank, good2] = [messageId(), messageId(), messageId()];
    // Valid text, but no identifier once trimmed: contactForIdentity refuses it.
    const payload = batch(
      text(sender(), 'first', good1),
      text('   ', 'from nobody', blank),
      text(sender(), 'second', good2),
    );
    expect((await h.deliver(payload)).status).toBe(200);
    expect(await storedIds([good1, blank, good2])).toEqual([good1, good2].sort());
    expect((await refused()).find((row) => row.platformId === blank)).toMatchObject({
      kind: 'message',
      reason: 'identity_identifier_required',
    });
  });

  test("a sender with no digit is refused with the graph's reason for such a phone", async () => {
    const [good, handle] = [messageId(), messageId()];
    // The sender is also matched as a phone number (+<sender>); the graph refuses a phone
    // without a digit `identity_identifier_malformed`, and so does the chat path.
    const payload = batch(text(sender(), 'first', good), text('call me', 'no digits', handle));
    expect((await h.deliver(payload)).status).toBe(200);
    expect(await storedIds([good, handle])).toEqual([good]);
    expect((await refused()).find((row) => row.platformId === handle)).toMatchObject({
      kind: 'message',
      reason: 'identity_identifier_malformed',
    });
  });

  test('an admin reads the refusals; a member is refused', async () => {
    expect((await refused()).length).toBeGreaterThan(0);
    const db = h.svc.db.database.db;
    const member = await createUser(db, h.svc.workspace, { role: 'member' });
    const memberHeaders = bearer(await tokenFor(db, member, { catalogue: h.svc.service.access }));
    const { body } = await h.svc.graph(REFUSED, {}, memberHeaders);
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'UNAUTHORIZED',
      reason: 'capability_missing',
    });
  });
});

describe('a payload of 20,000 messages', () => {
  test('stores the first 1000 in transactions of at most 100 and records the rest once', async () => {
    const from = sender();
    const ids = Array.from({ length: 20_000 }, () => messageId());
    const payload = batch(...ids.map((id, i) => text(from, `m${i}`, id)));
    expect((await h.deliver(payload)).status).toBe(200);
    expect(await storedIds(ids.slice(0, PAYLOAD_ITEMS_MAX))).toHaveLength(PAYLOAD_ITEMS_MAX);
    expect(await storedIds(ids.slice(PAYLOAD_ITEMS_MAX))).toEqual([]);
    // Rows one transaction wrote share its xmin: no transaction wrote more than a batch.
    const perTransaction = await sql()<{ n: number }[]>`
      select count(*)::int as n from chat_messages where external_id = any(${ids})
       group by xmin::text`;
    expect(Math.max(...perTransaction.map((row) => row.n))).toBeLessThanOrEqual(BATCH_ITEMS);
    expect(perTransaction.length).toBeGreaterThanOrEqual(PAYLOAD_ITEMS_MAX / BATCH_ITEMS);
    const over = (await refused()).filter((row) => row.reason === 'payload_too_many_items');
    expect(over).toEqual([
      expect.objectContaining({
        kind: 'payload',
        platformId: ids[PAYLOAD_ITEMS_MAX],
        detail: `${20_000 - PAYLOAD_ITEMS_MAX} items past the first ${PAYLOAD_ITEMS_MAX}`,
      }),
    ]);
  }, 240_000);
});

describe('statuses for replies the service never sent', () => {
  const statuses = (count: number) =>
    batch(
      ...Array.from({ length: count }, () =>
        statusUpdate({
          phoneNumberId: NUMBER,
          messageId: messageId(),
          recipientId: '1555',
          status: 'sent',
        }),
      ),
    );
  const waiting = async () =>
    (await sql()<{ n: number }[]>`select count(*)::int as n from chat_early_statuses`)[0]!.n;

  test('wait at most EARLY_STATUSES_MAX a workspace, however many payloads bring them', async () => {
    expect((await h.deliver(statuses(700))).status).toBe(200);
    expect(await waiting()).toBe(700);
    expect((await h.deliver(statuses(700))).status).toBe(200);
    expect(await waiting()).toBe(EARLY_STATUSES_MAX);
  }, 120_000);

  test('are swept by housekeeping once expired; fresh ones stay', async () => {
    await sql()`
      update chat_early_statuses set created_at = now() - interval '2 hours'
       where external_id in (select external_id from chat_early_statuses limit 600)`;
    const removed = await runHousekeeping({
      config: testConfig(),
      database: h.svc.db.database,
      log: captureLogger().log,
      plugins: h.svc.service.plugins,
    });
    expect(removed['chat: early statuses']).toBe(600);
    expect(await waiting()).toBe(EARLY_STATUSES_MAX - 600);
  });
});

describe('another workspace', () => {
  test('reads none of this workspace’s refusals', async () => {
    const db = h.svc.db.database.db;
    const other = await createWorkspace(db);
    const admin = await createUser(db, other, { role: 'admin' });
    const headers = bearer(await tokenFor(db, admin, { catalogue: h.svc.service.access }));
    expect(await refused(headers)).toEqual([]);
    expect((await refused()).length).toBeGreaterThan(0);
  });
});
