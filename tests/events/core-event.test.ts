import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eq } from 'drizzle-orm';
import { events } from '../../src/events/tables.js';
import type { User } from '../../src/users/tables.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createUser, tokenFor } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';
import { CORE_EVENT, openStream, record } from './sse.js';

// Two server processes' worth of service (each its own pool, event bus and LISTEN
// connection) sharing one database: A writes, B streams.
let db: TestDatabase;
let a: TestService;
let b: TestService;
let member: User;
let memberHeaders: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  a = await startTestService({ db });
  b = await startTestService({ db });
  member = await createUser(db.database.db, b.workspace, { role: 'member' });
  memberHeaders = bearer(await tokenFor(db.database.db, member));
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await db?.drop();
});

describe('coreEvent across processes', () => {
  test('a write committed through one service arrives on a stream of the other', async () => {
    const stream = await openStream(b, b.adminHeaders);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    try {
      const subjectId = b.admin.id;
      const id = await record(a.service.database.db, {
        workspaceId: b.workspace.id,
        name: 'contact.created',
        subjectId,
        actorUserId: b.admin.id,
        data: { id: subjectId, name: 'Ada' },
      });
      const frame = await stream.next();
      expect(frame.errors).toBeUndefined();
      const event = frame.data?.coreEvent as Record<string, unknown>;
      expect(event).toMatchObject({ id, name: 'contact.created', subjectId });
      const [row] = await db.database.db.select().from(events).where(eq(events.id, id));
      expect(new Date(event.at as string).getTime()).toBe(row?.at.getTime());
    } finally {
      stream.close();
      await stream.ended;
    }
  });

  test('a createContact mutation on one service streams contact.created on the other', async () => {
    const stream = await openStream(b, a.adminHeaders);
    try {
      const created = await a.graph(
        'mutation ($input: CreateContactInput!) { createContact(input: $input) { id } }',
        { input: { name: 'Grace Hopper' } },
      );
      expect(created.body.errors).toBeUndefined();
      const contactId = (created.body.data?.createContact as { id: string }).id;
      const frame = await stream.next();
      expect(frame.data?.coreEvent).toMatchObject({
        name: 'contact.created',
        subjectId: contactId,
      });
    } finally {
      stream.close();
      await stream.ended;
    }
  });

  test('only the caller’s workspace and audience reach it; a rolled-back write never does', async () => {
    const admin = await openStream(b, b.adminHeaders);
    const memberStream = await openStream(b, memberHeaders);
    try {
      const write = a.service.database.db;
      const workspaceId = b.workspace.id;
      // None of these four reaches the admin.
      const rolledBack = await record(
        write,
        { workspaceId, name: 'contact.created', subjectId: member.id },
        { rollback: true },
      );
      await record(write, { workspaceId, name: 'task.created', audienceUserId: member.id });
      await record(write, { workspaceId: a.workspace.id, name: 'contact.renamed' });
      await record(write, {
        workspaceId: a.workspace.id,
        name: 'task.updated',
        audienceUserId: b.admin.id,
      });
      // These reach the admin; the stream shows them next, in commit order.
      await record(write, { workspaceId, name: 'task.updated', audienceUserId: b.admin.id });
      await record(write, { workspaceId, name: 'contact.identity_added' });

      const names = async (stream: typeof admin) => {
        const seen: unknown[] = [];
        for (let i = 0; i < 2; i += 1) {
          const frame = await stream.next();
          seen.push((frame.data?.coreEvent as { name: string }).name);
        }
        return seen;
      };
      expect(await names(admin)).toEqual(['task.updated', 'contact.identity_added']);
      // The assignee sees its own task event, not the admin's.
      expect(await names(memberStream)).toEqual(['task.created', 'contact.identity_added']);
      expect(await db.database.db.select().from(events).where(eq(events.id, rolledBack))).toEqual(
        [],
      );
    } finally {
      admin.close();
      memberStream.close();
      await Promise.all([admin.ended, memberStream.ended]);
    }
  });

  test('a token sees only the areas its scopes read', async () => {
    const tasksOnly = bearer(await tokenFor(db.database.db, b.admin, { scopes: ['tasks:read'] }));
    const stream = await openStream(b, tasksOnly);
    try {
      const workspaceId = b.workspace.id;
      await record(a.service.database.db, { workspaceId, name: 'contact.created' });
      await record(a.service.database.db, {
        workspaceId,
        name: 'task.created',
        audienceUserId: b.admin.id,
      });
      const frame = await stream.next();
      expect((frame.data?.coreEvent as { name: string }).name).toBe('task.created');
    } finally {
      stream.close();
      await stream.ended;
    }
  });
});

describe('coreEvent refusals', () => {
  test('an anonymous subscription is refused, in the stream, and ends', async () => {
    const stream = await openStream(b, {});
    expect(stream.status).toBe(200);
    const frame = await stream.next();
    expect(frame.data ?? null).toBeNull();
    expect(frame.errors).toEqual([
      expect.objectContaining({
        message: 'authentication required',
        extensions: expect.objectContaining({
          code: 'UNAUTHENTICATED',
          reason: 'authentication_required',
        }),
      }),
    ]);
    expect(await stream.frame()).toEqual({ event: 'complete', data: '' });
    await stream.ended;
  });

  test.each([
    ['Accept */*', { accept: '*/*' }],
    ['a JSON Accept', { accept: 'application/json' }],
    ['event-stream beside a JSON type', { accept: 'text/event-stream, application/json' }],
  ])('with %s a subscription answers JSON, not a stream', async (_label, headers) => {
    const answer = await b.graph(CORE_EVENT, undefined, headers);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/json/);
    expect(answer.body.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION',
      reason: 'stream_required',
    });
  });
});
