// npm run bench, chat scenario: signed inbound text messages posted to the chat webhook at
// a fixed rate (open loop: each POST leaves on its schedule, whatever the earlier ones are
// doing), timed from the POST leaving to its 200 and to its frame on a
// `chatMessageReceived(conversationId)` stream; against a bare node:http handler, run in
// this process, that verifies the same signature and writes the same conversation upsert
// and chat_messages row in one transaction, with the same messages at the same rate.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { createDatabase } from '../../src/db/client.js';
import { peakRssMb } from './import.js';
import { freePort } from './support.js';

const MESSAGES = Number(process.env.BENCH_CHAT_MESSAGES ?? 2_000);
const RATE = Number(process.env.BENCH_CHAT_RATE ?? 200);
/** How long the stream may lag the last 200 before the missing frames are counted lost. */
const DRAIN_MS = 30_000;

/** What `startServe` needs for the chat plugin to take the bench's payloads. */
export const CHAT_ENV = {
  SVC_CHAT_APP_SECRET: 'bench-chat-app-secret',
  SVC_CHAT_VERIFY_TOKEN: 'bench-chat-verify-token',
  SVC_CHAT_PHONE_NUMBER_ID: '1000200030004000',
  SVC_CHAT_ACCESS_TOKEN: 'bench-chat-access-token',
  // Lets the scenario connect the workspace to the number (chatConnect) when the import
  // scenario has left a second workspace, so the environment's number no longer serves it.
  SVC_CHAT_CREDENTIALS_KEY: randomBytes(32).toString('hex'),
};

const SENDER = '15550001234';
const PROFILE = 'Bench Sender';

/** One text message from SENDER, as the platform posts it, with its signature. */
function signed(externalId: string, text: string) {
  const body = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: {
                display_phone_number: '15550783881',
                phone_number_id: CHAT_ENV.SVC_CHAT_PHONE_NUMBER_ID,
              },
              contacts: [{ profile: { name: PROFILE }, wa_id: SENDER }],
              messages: [
                {
                  from: SENDER,
                  id: externalId,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  type: 'text',
                  text: { body: text },
                },
              ],
            },
          },
        ],
      },
    ],
  });
  const signature = `sha256=${createHmac('sha256', CHAT_ENV.SVC_CHAT_APP_SECRET).update(body).digest('hex')}`;
  return { body, signature };
}

async function postSigned(url: string, message: { body: string; signature: string }) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': message.signature },
    body: message.body,
  });
  await response.arrayBuffer();
  return response.status;
}

async function graphQuery<T>(graph: string, token: string, query: string, variables = {}) {
  const response = await fetch(graph, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: T; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data!;
}

/**
 * A subscription over Server-Sent Events: calls `onNext` with each `next` frame's payload
 * as it is parsed.
 */
async function openStream(
  graph: string,
  token: string,
  query: string,
  onNext: (payload: { data?: Record<string, unknown>; errors?: unknown }) => void,
) {
  const abort = new AbortController();
  const response = await fetch(graph, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ query }),
    signal: abort.signal,
  });
  if (response.status !== 200) throw new Error(`stream answered ${response.status}`);
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          if (event === 'next' && data.length > 0) onNext(JSON.parse(data.join('\n')));
        }
      }
    } catch {
      // closed by close()
    }
  })();
  return {
    close: async () => {
      abort.abort();
      await reading;
    },
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

interface Run {
  perSecond: number;
  p50: number;
  p99: number;
  failures: Map<number, number>;
}

/**
 * Posts MESSAGES signed messages to `url` at RATE a second on a fixed schedule, each one
 * leaving whether or not the earlier ones were answered. `sent[i]` is when message i left.
 */
async function postAtRate(
  url: string,
  messages: { body: string; signature: string }[],
  sent: number[],
): Promise<Run> {
  const latencies: number[] = [];
  const failures = new Map<number, number>();
  const posts: Promise<void>[] = [];
  const start = performance.now();
  let lastAnswer = start;
  for (let i = 0; i < messages.length; i += 1) {
    const due = start + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const leftAt = performance.now();
    sent[i] = leftAt;
    posts.push(
      postSigned(url, messages[i]!).then(
        (status) => {
          const answeredAt = performance.now();
          if (status === 200) {
            latencies.push(answeredAt - leftAt);
            lastAnswer = Math.max(lastAnswer, answeredAt);
          } else failures.set(status, (failures.get(status) ?? 0) + 1);
        },
        () => void failures.set(0, (failures.get(0) ?? 0) + 1),
      ),
    );
  }
  await Promise.all(posts);
  latencies.sort((a, b) => a - b);
  return {
    perSecond: latencies.length / ((lastAnswer - start) / 1000),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    failures,
  };
}

/**
 * The bare handler: the same signature check (HMAC-SHA256 of the raw body, compared with
 * timingSafeEqual), JSON.parse, then the conversation upsert and the chat_messages row in
 * one transaction, and 200. It leaves out what the plugin adds around that row: the number's
 * workspace lookup, the contact by chat identity, the redelivery check and the event.
 */
async function baselineWebhook(databaseUrl: string, workspaceId: string, contactId: string) {
  const port = await freePort();
  const database = createDatabase(databaseUrl, { max: 10 });
  const { sql } = database;
  const secret = CHAT_ENV.SVC_CHAT_APP_SECRET;
  let failed = false;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const match = /^sha256=([0-9a-fA-F]{64})$/.exec(
          String(req.headers['x-hub-signature-256'] ?? ''),
        );
        const expected = createHmac('sha256', secret).update(body).digest();
        if (!match || !timingSafeEqual(expected, Buffer.from(match[1]!, 'hex'))) {
          return res.writeHead(403).end();
        }
        const value = JSON.parse(body.toString('utf8')).entry[0].changes[0].value;
        const message = value.messages[0];
        const sentAt = new Date(Number(message.timestamp) * 1000).toISOString();
        try {
          await sql.begin(async (tx) => {
            const [conversation] = await tx`
              insert into chat_conversations
                (workspace_id, contact_id, peer, phone_number_id, last_message_at, last_inbound_at)
              values (${workspaceId}, ${contactId}, ${message.from}, ${value.metadata.phone_number_id}, ${sentAt}, ${sentAt})
              on conflict (workspace_id, phone_number_id, peer) do update set
                last_message_at = greatest(chat_conversations.last_message_at, excluded.last_message_at),
                last_inbound_at = greatest(chat_conversations.last_inbound_at, excluded.last_inbound_at)
              returning id`;
            await tx`
              insert into chat_messages
                (workspace_id, conversation_id, direction, external_id, type, content, payload, sent_at)
              values (${workspaceId}, ${conversation!.id}, 'in', ${message.id}, ${message.type},
                ${message.text.body}, ${JSON.stringify(message.text)}::jsonb, ${sentAt})`;
          });
          res.writeHead(200).end();
        } catch (error) {
          if (!failed) console.error('baseline chat webhook:', error);
          failed = true;
          res.writeHead(500).end();
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise((r) => server.close(r));
      await database.close();
    },
  };
}

const failuresText = (failures: Map<number, number>) =>
  failures.size === 0
    ? 'none'
    : [...failures].map(([status, n]) => `${n}× ${status || 'network error'}`).join(', ');

/** Runs the scenario and prints its lines. */
export async function chatScenario(options: {
  databaseUrl: string;
  graph: string;
  serviceUrl: string;
  token: string;
  pid: number;
}) {
  const { graph, token } = options;
  const webhook = `${options.serviceUrl}/api/plugins/chat/webhook`;
  const run = randomBytes(4).toString('hex');
  // The environment's number serves the deployment's only workspace; the import scenario
  // adds a second, so the workspace is connected to the number (the same single lookup).
  await graphQuery(
    graph,
    token,
    'mutation ($n: String!, $t: String!) { chatConnect(phoneNumberId: $n, accessToken: $t) }',
    { n: CHAT_ENV.SVC_CHAT_PHONE_NUMBER_ID, t: CHAT_ENV.SVC_CHAT_ACCESS_TOKEN },
  );

  // Warm-up: the sender's contact and conversation.
  const warm = await postSigned(webhook, signed(`wamid.bench.${run}.warm`, 'warm-up'));
  if (warm !== 200) throw new Error(`chat webhook answered ${warm} to the warm-up`);
  const { chatConversations } = await graphQuery<{
    chatConversations: { id: string; contact: { id: string } }[];
  }>(graph, token, '{ chatConversations(first: 1) { id contact { id } } }');
  const conversation = chatConversations[0];
  if (!conversation) throw new Error('the warm-up message made no conversation');

  // The stream: message i's text is `bench <i>`.
  const arrived = new Map<number, number>();
  let listened: (() => void) | null = null;
  let drained: (() => void) | null = null;
  const stream = await openStream(
    graph,
    token,
    `subscription { chatMessageReceived(conversationId: "${conversation.id}") { id content } }`,
    (payload) => {
      const at = performance.now();
      const message = payload.data?.chatMessageReceived as { content: string } | undefined;
      const match = /^bench (-?\d+)$/.exec(message?.content ?? '');
      if (!match) return;
      arrived.set(Number(match[1]), at);
      if (match[1] === '-1') listened?.();
      else if (arrived.size > MESSAGES) drained?.();
    },
  );
  try {
    // Posted until one arrives on the stream: then the subscription is listening.
    const listening = new Promise<void>((resolve) => (listened = resolve));
    let tries = 0;
    while (!arrived.has(-1)) {
      if (tries++ > 50) throw new Error('the chatMessageReceived stream stays silent');
      await postSigned(webhook, signed(`wamid.bench.${run}.probe.${tries}`, 'bench -1'));
      await Promise.race([listening, new Promise((resolve) => setTimeout(resolve, 200))]);
    }

    const messages = Array.from({ length: MESSAGES }, (_, i) =>
      signed(`wamid.bench.${run}.${i}`, `bench ${i}`),
    );
    const sent: number[] = [];
    const allStreamed = new Promise<void>((resolve) => (drained = resolve));
    const service = await postAtRate(webhook, messages, sent);
    await Promise.race([allStreamed, new Promise((resolve) => setTimeout(resolve, DRAIN_MS))]);
    const toStream = [...arrived]
      .filter(([i]) => i >= 0)
      .map(([i, at]) => at - sent[i]!)
      .sort((a, b) => a - b);

    const baselineMessages = Array.from({ length: MESSAGES }, (_, i) =>
      signed(`wamid.baseline.${run}.${i}`, `baseline ${i}`),
    );
    const lookup = createDatabase(options.databaseUrl, { max: 1 });
    const [row] = await lookup.sql<{ workspace_id: string }[]>`
      select workspace_id from chat_conversations where id = ${conversation.id}`;
    await lookup.close();
    const workspaceId = row!.workspace_id;
    const bare = await baselineWebhook(options.databaseUrl, workspaceId, conversation.contact.id);
    let baseline: Run;
    try {
      baseline = await postAtRate(bare.url, baselineMessages, []);
    } finally {
      await bare.close();
    }

    const ms = (n: number) => `${n.toFixed(1)} ms`;
    console.log(
      `\nchat: ${MESSAGES} signed text messages from one sender at ${RATE}/s (open loop)`,
    );
    console.log(
      `baseline node:http (in-process) + HMAC + upsert and row: ${baseline.perSecond.toFixed(0)} messages/s, POST p50 ${ms(baseline.p50)}, p99 ${ms(baseline.p99)}, non-200 ${failuresText(baseline.failures)}`,
    );
    console.log(
      `svc chat webhook: ${service.perSecond.toFixed(0)} messages/s (${((service.perSecond / baseline.perSecond) * 100).toFixed(0)}% of baseline), POST p50 ${ms(service.p50)} (${(service.p50 / baseline.p50).toFixed(1)}×), p99 ${ms(service.p99)} (${(service.p99 / baseline.p99).toFixed(1)}×), non-200 ${failuresText(service.failures)}`,
    );
    console.log(
      `svc webhook POST → chatMessageReceived frame: p50 ${ms(percentile(toStream, 0.5))}, p99 ${ms(percentile(toStream, 0.99))}, max ${ms(toStream.at(-1) ?? NaN)}; ${toStream.length} of ${MESSAGES} frames (p50 ${(percentile(toStream, 0.5) / baseline.p50).toFixed(1)}×, p99 ${(percentile(toStream, 0.99) / baseline.p99).toFixed(1)}× the baseline's POST)`,
    );
    console.log(`svc serve peak RSS through the bench: ${peakRssMb(options.pid).toFixed(0)} MB`);
  } finally {
    await stream.close();
  }
}
