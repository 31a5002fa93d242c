import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  startEventBus,
  parseNotice,
  type EventBus,
  type Subscription,
} from '../../src/events/bus.js';
import { announceRevocation } from '../../src/events/revocations.js';
import { busLag, busNotices } from '../../src/metrics/registry.js';
import { EVENTS_CHANNEL } from '../../src/events/service.js';
import type { Actor } from '../../src/context.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createUser, createWorkspace } from '../support/factories.js';
import { captureLogger } from '../support/service.js';
import { sessionActor, tokenActor } from './actors.js';
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

/** A member of a new workspace, signed in with a token. */
async function member(): Promise<Actor> {
  const workspace = await createWorkspace(db.database.db);
  const user = await createUser(db.database.db, workspace);
  return (await tokenActor(db.database.db, user)).actor;
}

/** Resolves true when the subscription ends, false when a notice arrives first. */
async function ends(sub: Subscription): Promise<boolean> {
  return (await sub.next()).done === true;
}

describe('event bus', () => {
  test('a subscriber that falls more than maxQueue behind is ended, others keep going', async () => {
    const actor = await member();
    const { workspaceId } = actor;
    const slow = bus.subscribe({ actor });
    const reader = bus.subscribe({ actor });
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
    const actor = await member();
    const sub = bus.subscribe({ actor });
    await db.database.sql`select pg_notify(${EVENTS_CHANNEL}, 'not json')`;
    await record(db.database.db, { workspaceId: actor.workspaceId, name: 'task.created' });
    expect((await sub.next()).value).toMatchObject({ name: 'task.created' });
    sub.close();
    expect(parseNotice('{"id":1}')).toBeNull();
  });

  test('each notice heard is counted and its lag from the commit observed (svc_event_bus_*)', async () => {
    const actor = await member();
    const sub = bus.subscribe({ actor });
    const heard = async () => (await busNotices.get()).values[0]?.value ?? 0;
    const lagged = async () =>
      (await busLag.get()).values.find((v) => v.metricName === 'svc_event_bus_lag_seconds_count')
        ?.value ?? 0;
    const [noticesBefore, lagBefore] = [await heard(), await lagged()];
    await record(db.database.db, { workspaceId: actor.workspaceId, name: 'task.created' });
    expect((await sub.next()).value).toMatchObject({ name: 'task.created' });
    expect((await heard()) - noticesBefore).toBe(1);
    expect((await lagged()) - lagBefore).toBe(1);
    sub.close();
  });

  test('an aborted signal ends the subscription; after close new ones end at once', async () => {
    const actor = await member();
    const abort = new AbortController();
    const sub = bus.subscribe({ actor, signal: abort.signal });
    const pending = sub.next();
    abort.abort();
    expect(await pending).toEqual({ value: undefined, done: true });

    const other = await startEventBus(db.database, log);
    const open = other.subscribe({ actor });
    const waiting = open.next();
    await other.close();
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(await other.subscribe({ actor }).next()).toMatchObject({ done: true });
    expect(other.size()).toBe(0);
  });
});

describe('revocations on the bus', () => {
  test('a revocation rolled back announces nothing: the stream stays open', async () => {
    const actor = await member();
    const sub = bus.subscribe({ actor });
    const rolledBack = new Error('rolled back on purpose');
    await expect(
      db.database.db.transaction(async (tx) => {
        await announceRevocation(tx, { workspaceId: actor.workspaceId });
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    await record(db.database.db, { workspaceId: actor.workspaceId, name: 'contact.created' });
    expect((await sub.next()).value).toMatchObject({ name: 'contact.created' });
    sub.close();
  });

  test('a credential revoked before its subscriber registered ends the subscription at once', async () => {
    const actor = await member();
    await db.database
      .sql`update api_tokens set revoked_at = now() where id = ${actor.token?.id ?? ''}`;
    expect(await ends(bus.subscribe({ actor, lifetimeMs: 300_000 }))).toBe(true);
  });

  test('a role changed before its subscriber registered ends the subscription at once', async () => {
    const actor = await member();
    await db.database.sql`update users set role = 'admin' where id = ${actor.userId}`;
    expect(await ends(bus.subscribe({ actor, lifetimeMs: 300_000 }))).toBe(true);
  });

  test('when the listening connection comes back, every open subscription ends, once', async () => {
    const workspace = await createWorkspace(db.database.db);
    const user = await createUser(db.database.db, workspace);
    const own = await startEventBus(db.database, log);
    try {
      const { actor } = await tokenActor(db.database.db, user);
      const subs = [
        own.subscribe({ actor }),
        own.subscribe({ actor: await sessionActor(db.database.db, user) }),
      ];
      // The test database's one LISTEN connection serves both buses; drop it.
      await db.database.sql`
        select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and query ilike 'listen%'`;
      expect(await Promise.all(subs.map(ends))).toEqual([true, true]);
      expect(lines.some((line) => line.msg === 'event bus listening again, streams ended')).toBe(
        true,
      );
      // They end when every channel listens again (postgres.js listens channel by channel,
      // a round trip apart): a client that reconnects at once keeps its new stream.
      const fresh = own.subscribe({ actor });
      await record(db.database.db, { workspaceId: workspace.id, name: 'contact.created' });
      expect((await fresh.next()).value).toMatchObject({ name: 'contact.created' });
      fresh.close();
    } finally {
      await own.close();
    }
  });
});
