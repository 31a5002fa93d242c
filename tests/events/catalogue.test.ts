// Every event of the catalogue names its subject (SPEC 6: `data` carries the subject), so an
// automation knows which record changed. The names come from the running service's
// catalogue (core names plus every stock plugin's), so an event added without a trigger
// here fails the first test. Events are triggered through the graph and read as a webhook
// receiver and a `coreEvent` stream get them.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { uploadFile } from '../plugins/importer/support.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { subjectKey } from '../../src/events/subject.js';
import { eventCatalogue } from '../../src/webhooks/service.js';
import { APP_SECRET, NUMBER, VERIFY_TOKEN } from '../plugins/chat/support.js';
import {
  inboundMessage,
  postWebhook,
  startChatPlatform,
  statusUpdate,
  type ChatPlatform,
  type WebhookPayload,
} from '../support/chat-platform.js';
import {
  ADD_IDENTITY,
  createContactVia,
  dataOf,
  DELETE_IDENTITY,
  RENAME_CONTACT,
} from '../support/contacts.js';
import { startTestService, type TestService } from '../support/service.js';
import { CREATE_TASK, UPDATE_TASK } from '../support/tasks.js';
import { openStream, type SseStream } from './sse.js';

/** Names in the catalogue that no code in this tree records, and who does. */
const RECORDED_ELSEWHERE: Record<string, string> = {};

interface Envelope {
  id: string;
  name: string;
  at: string;
  data: Record<string, unknown>;
}

/** What one trigger's event must carry in `data`: at least these fields. */
type Trigger = () => Promise<Record<string, unknown>>;

let svc: TestService;
/** The chat plugin's platform: the environment's number serves the one workspace. */
let platform: ChatPlatform;

beforeAll(async () => {
  platform = await startChatPlatform();
  svc = await startTestService({
    plugins: {},
    env: {
      SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32',
      SVC_CHAT_APP_SECRET: APP_SECRET,
      SVC_CHAT_VERIFY_TOKEN: VERIFY_TOKEN,
      SVC_CHAT_ACCESS_TOKEN: platform.accessToken,
      SVC_CHAT_PHONE_NUMBER_ID: NUMBER,
      SVC_CHAT_GRAPH_URL: platform.graphUrl,
    },
  });
});

afterAll(async () => {
  await svc.stop();
  await platform.close();
});

async function contact(
  name = 'Env Probe',
  identities: { channel: string; identifier: string }[] = [],
) {
  return createContactVia(svc, name, identities);
}

async function task(title = 'Call back', contactId: string | null = null): Promise<string> {
  const { body } = await svc.graph(CREATE_TASK, { input: { title, contactId } });
  return dataOf<{ task: { id: string } }>(body, 'createTask').task.id;
}

async function updateTask(id: string, input: Record<string, unknown>): Promise<void> {
  const { body } = await svc.graph(UPDATE_TASK, { id, input });
  expect(body.errors).toBeUndefined();
}

const NOTE_CREATE = `mutation ($contactId: UUID!, $body: String!) {
  noteCreate(contactId: $contactId, body: $body) { id }
}`;

const DEFINE_FIELD = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }`;
const WRITE_FIELDS = `mutation ($contactId: UUID!, $values: JSON!) {
  writeContactFields(contactId: $contactId, values: $values) { id }
}`;

const CHAT_THREAD = `query ($id: UUID!) {
  chatConversation(id: $id) {
    id contact { id name } messages { id content media { state } }
  }
}`;

interface ChatThread {
  id: string;
  contact: { id: string; name: string };
  messages: { id: string; content: string; media: { state: string } | null }[];
}

async function chatDeliver(payload: WebhookPayload): Promise<void> {
  const answer = await postWebhook(`${svc.origin}/api/plugins/chat/webhook`, payload, {
    appSecret: APP_SECRET,
    via: (url, init) => svc.request(url, init),
  });
  expect(answer.status).toBe(200);
}

/** A new chat thread started by `from`'s message `text` (or file): its ids and contact. */
async function chatThread(
  from: string,
  message: { text: string } | { mediaId: string; caption: string },
): Promise<{ thread: ChatThread; externalId: string; messageId: string }> {
  const externalId = `wamid.catalogue-${from}`;
  const base = { phoneNumberId: NUMBER, from, profileName: 'Chat Probe', id: externalId };
  await chatDeliver(
    'text' in message
      ? inboundMessage({ ...base, type: 'text', text: { body: message.text } })
      : inboundMessage({
          ...base,
          type: 'image',
          image: { ...platform.mediaPart(message.mediaId), caption: message.caption },
        }),
  );
  const [row] = (await svc.db.database.db.execute(
    sql`select conversation_id, id from chat_messages where external_id = ${externalId}`,
  )) as unknown as { conversation_id: string; id: string }[];
  const { body } = await svc.graph(CHAT_THREAD, { id: row!.conversation_id });
  return { thread: dataOf<ChatThread>(body, 'chatConversation'), externalId, messageId: row!.id };
}

/** One write per event name, answering the fields its event's `data` must hold. */
const TRIGGERS: Record<string, Trigger> = {
  'contact.created': async () => {
    const created = await contact('Env Probe');
    return { contactId: created.id, name: 'Env Probe' };
  },
  'contact.renamed': async () => {
    const created = await contact('Before');
    const { body } = await svc.graph(RENAME_CONTACT, { id: created.id, name: 'After' });
    expect(body.errors).toBeUndefined();
    return { contactId: created.id, from: 'Before', to: 'After' };
  },
  'contact.identity_added': async () => {
    const created = await contact('Gains one');
    const identity = { channel: 'email', identifier: 'gains@example.com' };
    const { body } = await svc.graph(ADD_IDENTITY, { contactId: created.id, identity });
    const added = dataOf<{ identity: { id: string } }>(body, 'addContactIdentity');
    return { contactId: created.id, identityId: added.identity.id, ...identity };
  },
  'contact.identity_removed': async () => {
    const identity = { channel: 'email', identifier: 'loses@example.com' };
    const created = await contact('Loses one', [identity]);
    const identityId = created.identities[0]!.id;
    const { body } = await svc.graph(DELETE_IDENTITY, { id: identityId });
    expect(body.errors).toBeUndefined();
    return { contactId: created.id, identityId, ...identity };
  },
  'contact.deleted': async () => {
    const created = await contact('Erased');
    const { body } = await svc.graph('mutation ($id: UUID!) { deleteContact(id: $id) { id } }', {
      id: created.id,
    });
    expect(body.errors).toBeUndefined();
    return { contactId: created.id };
  },
  'contact.merged': async () => {
    const target = await contact('Kept');
    const source = await contact('Folded in');
    const { body } = await svc.graph(
      'mutation ($t: UUID!, $s: [UUID!]!) { mergeContacts(targetId: $t, sourceIds: $s) { mergedIds } }',
      { t: target.id, s: [source.id] },
    );
    expect(body.errors).toBeUndefined();
    return { contactId: target.id, sourceIds: [source.id] };
  },
  'task.created': async () => {
    const about = await contact('Task holder');
    const id = await task('Call back', about.id);
    return { taskId: id, title: 'Call back', contactId: about.id };
  },
  'task.updated': async () => {
    const id = await task('Draft');
    await updateTask(id, { title: 'Final' });
    return { taskId: id, title: 'Final', changed: ['title'] };
  },
  'task.completed': async () => {
    const id = await task('Finish me');
    await updateTask(id, { status: 'done' });
    return { taskId: id, status: 'done' };
  },
  'task.deleted': async () => {
    const id = await task('Drop me');
    const { body } = await svc.graph('mutation ($id: UUID!) { deleteTask(id: $id) { id } }', {
      id,
    });
    expect(body.errors).toBeUndefined();
    return { taskId: id };
  },
  'contact.fields_changed': async () => {
    const about = await contact('Has fields');
    const input = { name: 'tier', label: 'Tier', kind: 'text' };
    expect((await svc.graph(DEFINE_FIELD, { input })).body.errors).toBeUndefined();
    const { body } = await svc.graph(WRITE_FIELDS, {
      contactId: about.id,
      values: { tier: 'Gold' },
    });
    expect(body.errors).toBeUndefined();
    return { contactId: about.id, fields: ['tier'] };
  },
  'import.staged': async () => {
    const { body } = await uploadFile(svc, 'name,email\nAda,ada@example.com\nBea,b@example.com\n');
    const staged = dataOf<{ id: string }>(body, 'importUpload');
    return { importId: staged.id, rows: 2 };
  },
  'import.completed': async () => {
    const { body } = await uploadFile(svc, 'name,email\nAda,ada@example.com\nBea,\n');
    const id = dataOf<{ id: string }>(body, 'importUpload').id;
    const mapping = [
      { column: 0, target: 'name' },
      { column: 1, target: 'identity:email' },
    ];
    const mapped = await svc.graph(
      'mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { id } }',
      { id, m: mapping },
    );
    expect(mapped.body.errors).toBeUndefined();
    const committed = await svc.graph('mutation ($id: UUID!) { importCommit(id: $id) { id } }', {
      id,
    });
    expect(committed.body.errors).toBeUndefined();
    return { importId: id, created: 1, skipped: 1 };
  },
  'chat.message.received': async () => {
    const { thread, externalId, messageId } = await chatThread('34600000001', { text: 'Hola' });
    return {
      conversation_id: thread.id,
      contact_id: thread.contact.id,
      contact_name: 'Chat Probe',
      external_id: externalId,
      text: 'Hola',
      message_id: messageId,
    };
  },
  'chat.message.status': async () => {
    const { thread } = await chatThread('34600000002', { text: 'Reply please' });
    const { body } = await svc.graph(
      `mutation ($id: UUID!, $text: String!) {
        chatSendMessage(conversationId: $id, text: $text) { id }
      }`,
      { id: thread.id, text: 'On it' },
    );
    const reply = dataOf<{ id: string }>(body, 'chatSendMessage');
    const [sent] = await platform.waitForSent(1);
    await chatDeliver(
      statusUpdate({
        phoneNumberId: NUMBER,
        messageId: sent!.messageId!,
        recipientId: '34600000002',
        status: 'delivered',
      }),
    );
    return {
      conversation_id: thread.id,
      message_id: reply.id,
      external_id: sent!.messageId,
      status: 'delivered',
    };
  },
  'chat.media.settled': async () => {
    const mediaId = platform.addMedia({
      bytes: Buffer.from('a tiny image'),
      mimeType: 'image/png',
    });
    const { thread, messageId } = await chatThread('34600000003', { mediaId, caption: 'Look' });
    // The file is downloaded shortly after the message arrives; the event comes with it.
    const deadline = Date.now() + 20_000;
    for (let state = thread.messages[0]?.media?.state; state !== 'stored';) {
      if (Date.now() > deadline) throw new Error(`media still ${String(state)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const { body } = await svc.graph(CHAT_THREAD, { id: thread.id });
      state = dataOf<ChatThread>(body, 'chatConversation').messages[0]?.media?.state;
    }
    return { conversation_id: thread.id, message_id: messageId, media_state: 'stored' };
  },
  'note.created': async () => {
    const about = await contact('Noted');
    const { body } = await svc.graph(NOTE_CREATE, { contactId: about.id, body: 'Met today' });
    const note = dataOf<{ id: string }>(body, 'noteCreate');
    return { noteId: note.id, contactId: about.id };
  },
};

/** Envelopes a loopback receiver got; `until(n)` resolves once n have arrived. */
async function receiver() {
  const got: Envelope[] = [];
  let wanted = Infinity;
  let reached: () => void = () => {};
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      got.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Envelope);
      res.writeHead(204).end();
      if (got.length >= wanted) reached();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    got,
    until(n: number): Promise<void> {
      wanted = n;
      return got.length >= n ? Promise.resolve() : new Promise((resolve) => (reached = resolve));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function recordedInWorkspace(): Promise<{ id: string; subject_id: string }[]> {
  return (await svc.db.database.db.execute(
    sql`select id, subject_id from events where workspace_id = ${svc.workspace.id}`,
  )) as unknown as { id: string; subject_id: string }[];
}

/** The next `n` coreEvent frames, as event id to subject id. */
async function subjectsStreamed(stream: SseStream, n: number): Promise<Map<string, unknown>> {
  const seen = new Map<string, unknown>();
  for (let i = 0; i < n; i += 1) {
    const frame = await stream.next();
    expect(frame.errors).toBeUndefined();
    const event = frame.data?.coreEvent as { id: string; subjectId: unknown };
    seen.set(event.id, event.subjectId);
  }
  return seen;
}

describe('the event catalogue', () => {
  test('every event name the service publishes has a trigger here', () => {
    const covered = [...Object.keys(TRIGGERS), ...Object.keys(RECORDED_ELSEWHERE)].sort();
    expect([...eventCatalogue()].sort()).toEqual(covered);
  });

  test('every event’s webhook data carries its subject’s id, the same coreEvent names', async () => {
    const names = [...eventCatalogue()].filter((name) => !(name in RECORDED_ELSEWHERE));
    const hook = await receiver();
    const stream = await openStream(svc, svc.adminHeaders);
    try {
      const { body } = await svc.graph(
        `mutation ($url: String!, $events: [String!]!) {
          createWebhook(url: $url, events: $events) { webhook { id } }
        }`,
        { url: hook.url, events: [...eventCatalogue()] },
      );
      expect(body.errors).toBeUndefined();
      const expected: Record<string, unknown> = {};
      for (const name of names) {
        const trigger = TRIGGERS[name];
        if (!trigger) throw new Error(`no trigger for ${name}`);
        expected[name] = expect.arrayContaining([expect.objectContaining(await trigger())]);
      }

      const recorded = await recordedInWorkspace();
      await hook.until(recorded.length);
      const got = Object.fromEntries(
        names.map((name) => [name, hook.got.filter((e) => e.name === name).map((e) => e.data)]),
      );
      expect(got).toEqual(expected);

      // Every delivery, setup writes included: its data names the event's subject, under the
      // key its name gives, and the coreEvent of the same id names the same record.
      const subjectOf = new Map(recorded.map((row) => [row.id, row.subject_id]));
      const streamed = await subjectsStreamed(stream, recorded.length);
      const wrong = hook.got.filter(
        (e) =>
          typeof subjectOf.get(e.id) !== 'string' ||
          e.data[subjectKey(e.name)] !== subjectOf.get(e.id) ||
          streamed.get(e.id) !== subjectOf.get(e.id),
      );
      expect(wrong).toEqual([]);
      expect(hook.got).toHaveLength(recorded.length);
    } finally {
      stream.close();
      await stream.ended;
      await hook.close();
    }
  });
});
