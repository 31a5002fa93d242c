import { afterAll, beforeAll, test } from '@jest/globals';
import { batch, inboundMessage, messageId, statusUpdate } from '../../support/chat-platform.js';
import { NUMBER, startChatHarness, type ChatHarness } from './support.js';

let h: ChatHarness;
beforeAll(async () => { h = await startChatHarness({ env: { SVC_GRAPH_UPLOAD_MAX_BYTES: '100000000' } }); });
afterAll(() => h.stop());
const msg = (from: string, body: string) =>
  inboundMessage({ phoneNumberId: NUMBER, from, profileName: 'X', type: 'text', text: { body } });

async function measured(label: string, payload: unknown) {
  const probe = h.svc.db.database.sql;
  let longest = 0; let done = false;
  const poll = (async () => { while (!done) { const [r] = await probe<{ s: number }[]>`select coalesce(max(extract(epoch from now() - xact_start)), 0)::float8 as s from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`; longest = Math.max(longest, r!.s); await new Promise((r) => setTimeout(r, 50)); } })();
  const t = Date.now();
  const st = (await h.deliver(payload as never)).status;
  done = true; await poll;
  console.log(label, 'status', st, 'ms', Date.now() - t, 'longest xact s', longest.toFixed(2));
}

test('timing', async () => {
  console.log('nul', (await h.deliver(msg('15550000001', 'a\u0000b'))).status);
  console.log('surrogate', (await h.deliver(msg('15550000002', 'a\ud800b'))).status);
  console.log('from', (await h.deliver(msg('1'.repeat(10000), 'hi'))).status);
  console.log('mixed', (await h.deliver(batch(msg('15550000003', 'good'), msg('15550000004', 'a\u0000')))).status,
    (await h.svc.db.database.sql`select count(*)::int as n from chat_messages where external_id is not null`)[0]);
  const statuses = Array.from({ length: 5000 }, () =>
    statusUpdate({ phoneNumberId: NUMBER, messageId: messageId(), recipientId: '1555', status: 'sent' }));
  console.log('early', (await h.deliver(batch(...statuses))).status,
    (await h.svc.db.database.sql`select count(*)::int as n from chat_early_statuses`)[0]);
  await measured('1000', batch(...Array.from({ length: 1000 }, (_, i) => msg(`1557${String(i % 100).padStart(7, '0')}`, `m${i}`))));
  await measured('20000', batch(...Array.from({ length: 20000 }, (_, i) => msg(`1556${String(i % 500).padStart(7, '0')}`, `m${i}`))));
}, 600_000);
