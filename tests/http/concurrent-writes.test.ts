// N concurrent writes of one row by one caller (issue 26, item 3): they queue for the row's
// lock on the caller's share of the pool, every one is answered (none at the deadline),
// and the caller's own `me` is answered meanwhile. The kept turn of the query gate
// (src/db/gate.ts) means no transaction of the caller waits for a connection only the
// caller's other transactions, waiting for its locks, could free.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dataOf, freshWorkspaceHeaders } from '../support/contacts.js';
import { startTestService, type GraphBody, type TestService } from '../support/service.js';

const DEADLINE_MS = 20_000;
const N = 20;
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    plugins: {},
    env: {
      SVC_GRAPH_OPERATION_TIMEOUT: `${DEADLINE_MS}ms`,
      // Room for the N writes and the `me` beside them.
      SVC_GRAPH_OPERATIONS_PER_USER: String(N + 5),
      SVC_WEBHOOK_ALLOWED_HOSTS: 'hooks.test:8080',
    },
  });
});

afterAll(() => svc.stop());

async function timed<T>(work: Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work;
  return { ms: performance.now() - started, value };
}

/**
 * Sends `n` writes at once as `headers`, asking `me` again and again until they are all
 * answered; answers the writes' bodies once each answered well before the deadline.
 */
async function concurrently(
  headers: Record<string, string>,
  write: (i: number) => Promise<{ body: GraphBody }>,
): Promise<GraphBody[]> {
  let settled = false;
  const writes = Promise.all(Array.from({ length: N }, (_, i) => timed(write(i)))).finally(
    () => (settled = true),
  );
  const mes: number[] = [];
  do {
    const me = await timed(svc.graph('{ me { id } }', {}, headers));
    expect(me.value.body.errors).toBeUndefined();
    mes.push(me.ms);
  } while (!settled);
  const answers = await writes;
  for (const answer of answers) {
    expect(answer.value.body.errors?.[0]?.extensions.reason).not.toBe(
      'operation_deadline_exceeded',
    );
    expect(answer.ms).toBeLessThan(DEADLINE_MS / 2);
  }
  expect(Math.max(...mes)).toBeLessThan(DEADLINE_MS / 4);
  return answers.map((answer) => answer.value.body);
}

describe(`${N} concurrent writes of one row by one caller`, () => {
  test('rename one contact', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const { id } = dataOf<{ id: string }>(
      (await svc.graph('mutation { createContact(input: { name: "Ada" }) { id } }', {}, headers))
        .body,
      'createContact',
    );
    const bodies = await concurrently(headers, (i) =>
      svc.graph(
        'mutation ($id: UUID!, $name: String!) { renameContact(id: $id, name: $name) { id } }',
        { id, name: `Ada ${i}` },
        headers,
      ),
    );
    expect(bodies.every((body) => !body.errors)).toBe(true);
  });

  test('update one task', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const created = await svc.graph(
      'mutation { createTask(input: { title: "Call Ada" }) { task { id } } }',
      {},
      headers,
    );
    const { id } = dataOf<{ task: { id: string } }>(created.body, 'createTask').task;
    const bodies = await concurrently(headers, (i) =>
      svc.graph(
        'mutation ($id: UUID!, $title: String!) { updateTask(id: $id, input: { title: $title }) { id } }',
        { id, title: `Call Ada ${i}` },
        headers,
      ),
    );
    expect(bodies.every((body) => !body.errors)).toBe(true);
  });

  test('delete one webhook', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const created = await svc.graph(
      'mutation { createWebhook(url: "http://hooks.test:8080/in", events: ["contact.created"]) { webhook { id } } }',
      {},
      headers,
    );
    const { id } = dataOf<{ webhook: { id: string } }>(created.body, 'createWebhook').webhook;
    const bodies = await concurrently(headers, () =>
      svc.graph('mutation ($id: UUID!) { deleteWebhook(id: $id) }', { id }, headers),
    );
    // One deletes it; the rest find it gone.
    expect(bodies.filter((body) => body.data?.deleteWebhook === true)).toHaveLength(1);
  });

  test('define one custom field, then write one contact’s values', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const defined = await concurrently(headers, () =>
      svc.graph(
        'mutation { defineField(input: { name: "tier", label: "Tier", kind: "text" }) { id } }',
        {},
        headers,
      ),
    );
    expect(defined.filter((body) => !body.errors)).toHaveLength(1);
    for (const body of defined.filter((b) => b.errors)) {
      expect(body.errors![0]!.extensions.reason).toBe('field_name_taken');
    }
    const { id } = dataOf<{ id: string }>(
      (await svc.graph('mutation { createContact(input: { name: "Ada" }) { id } }', {}, headers))
        .body,
      'createContact',
    );
    const written = await concurrently(headers, (i) =>
      svc.graph(
        'mutation ($id: UUID!, $values: JSON!) { writeContactFields(contactId: $id, values: $values) { id } }',
        { id, values: { tier: `Gold ${i}` } },
        headers,
      ),
    );
    expect(written.every((body) => !body.errors)).toBe(true);
  });
});
