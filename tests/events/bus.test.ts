import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startEventBus, parseNotice, type EventBus } from '../../src/events/bus.js';
import { EVENTS_CHANNEL } from '../../src/events/service.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';
import { captureLogger } from '../support/service.js';
import { record } from './sse.js';

let db: TestDatabase;
let bus: EventBus;
const { log, lines } = captureLogger();

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startEventBus(db.database, log, { maxQueue: 2 });
});

afterAll(async () => {
  await bus?.close();
  await db?.drop();
});

describe('event bus', () => {
  test('a subscriber that falls more than maxQueue behind is ended, others keep going', async () => {
    const workspaceId = (await createWorkspace(db.database.db)).id;
    const slow = bus.subscribe({ workspaceId });
    const reader = bus.subscribe({ workspaceId });
    const names = ['contact.created', 'contact.renamed', 'contact.identity_added'];
    // The reader keeps a next() pending, so it never holds more than two waiting.
    const read = (async () => {
      const got: unknown[] = [];
      for (let i = 0; i < names.length; i += 1) got.push((await reader.next()).value);
      return got;
    })();
    for (const name of names) await record(db.database.db, { workspaceId, name });
    expect(await read).toEqual(names.map((name) => expect.objectContaining({ workspaceId, name })));
    // The third notice overflowed the slow one's queue: it ended, its backlog dropped.
    expect(await slow.next()).toEqual({ value: undefined, done: true });
    expect(lines.some((line) => line.msg === 'event subscriber too slow, ended')).toBe(true);
    reader.close();
    expect(await reader.next()).toEqual({ value: undefined, done: true });
  });

  test('an unreadable notice on the channel is skipped', async () => {
    const workspaceId = (await createWorkspace(db.database.db)).id;
    const sub = bus.subscribe({ workspaceId });
    await db.database.sql`select pg_notify(${EVENTS_CHANNEL}, 'not json')`;
    await record(db.database.db, { workspaceId, name: 'task.created' });
    expect((await sub.next()).value).toMatchObject({ name: 'task.created' });
    sub.close();
    expect(parseNotice('{"id":1}')).toBeNull();
  });

  test('an aborted signal ends the subscription; after close new ones end at once', async () => {
    const abort = new AbortController();
    const sub = bus.subscribe({ workspaceId: randomUUID(), signal: abort.signal });
    const pending = sub.next();
    abort.abort();
    expect(await pending).toEqual({ value: undefined, done: true });

    const other = await startEventBus(db.database, log);
    const open = other.subscribe({ workspaceId: randomUUID() });
    const waiting = open.next();
    await other.close();
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(await other.subscribe({ workspaceId: randomUUID() }).next()).toMatchObject({
      done: true,
    });
    expect(other.size()).toBe(0);
  });
});
