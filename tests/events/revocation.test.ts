// SPEC 5 on open streams: a stream ends, without waiting for its lifetime, once the
// credential it was opened with stops working. Two services share one database (each its
// own pool, event bus and LISTEN connection): the change goes through A, the streams are
// open on B. SVC_STREAM_LIFETIME is 5 minutes, so only the revocation can end them.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { User } from '../../src/users/tables.js';
import { issueLink } from '../../src/users/links.js';
import { runSvc } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import {
  bearer,
  bearerFor,
  createUser,
  createWorkspace,
  sessionCookieFor,
  sessionFor,
} from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';
import { RESET, SET_DISABLED, SET_ROLE } from '../users/support.js';
import { tokenActor } from './actors.js';
import { COMPLETE, endOf, openStream, record, type SseStream } from './sse.js';

/** Far under the 5-minute lifetime: a stream ending inside it was ended by the change. */
const BOUND_MS = 10_000;
const env = { SVC_STREAM_LIFETIME: '5m' };

let db: TestDatabase;
let a: TestService;
let b: TestService;

beforeAll(async () => {
  db = await createTestDatabase();
  a = await startTestService({ db, env });
  b = await startTestService({ db, env });
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await db?.drop();
});

/** Expects the server to complete `stream` within the bound. */
async function completes(stream: SseStream): Promise<void> {
  expect(await endOf(stream, BOUND_MS)).toEqual(COMPLETE);
}

/**
 * Proves `stream` still open and served: an event committed after the change reaches it
 * (notices arrive in commit order, so the revocation was seen first).
 */
async function streamsOn(stream: SseStream, workspaceId: string): Promise<void> {
  const id = await record(a.service.database.db, { workspaceId, name: 'contact.created' });
  expect((await stream.next()).data?.coreEvent).toMatchObject({ id });
}

/** Opens streams, runs the test, then closes whatever is still open. */
async function withStreams(
  open: Promise<SseStream>[],
  run: (streams: SseStream[]) => Promise<void>,
): Promise<void> {
  const streams = await Promise.all(open);
  try {
    await run(streams);
  } finally {
    for (const stream of streams) stream.close();
    await Promise.all(streams.map((stream) => stream.ended));
  }
}

async function memberOfB(): Promise<User> {
  return createUser(db.database.db, b.workspace, { role: 'member' });
}

describe('a stream ends with its credential', () => {
  test('disabling an account ends its token and session streams; a colleague streams on', async () => {
    const [user, colleague] = await Promise.all([memberOfB(), memberOfB()]);
    const cookie = await sessionCookieFor(db.database.db, user);
    await withStreams(
      [
        openStream(b, await bearerFor(db.database.db, user)),
        openStream(b, { cookie }),
        openStream(b, await bearerFor(db.database.db, colleague)),
      ],
      async ([token, session, other]) => {
        const { body } = await a.graph(
          SET_DISABLED,
          { id: user.id, disabled: true },
          b.adminHeaders,
        );
        expect(body.errors).toBeUndefined();
        await Promise.all([completes(token as SseStream), completes(session as SseStream)]);
        await streamsOn(other as SseStream, b.workspace.id);
      },
    );
  });

  test('revoking a token ends its stream; another token of the account streams on', async () => {
    const user = await memberOfB();
    const cookie = await sessionCookieFor(db.database.db, user);
    const revoked = await tokenActor(db.database.db, user);
    await withStreams(
      [openStream(b, bearer(revoked.token)), openStream(b, await bearerFor(db.database.db, user))],
      async ([stream, other]) => {
        const { body } = await a.graph(
          'mutation ($id: UUID!) { apiTokenRevoke(id: $id) { revokedAt } }',
          { id: revoked.actor.token?.id },
          { cookie },
        );
        expect(body.errors).toBeUndefined();
        await completes(stream as SseStream);
        await streamsOn(other as SseStream, b.workspace.id);
      },
    );
  });

  test('signing out ends that session’s stream; another session of the account streams on', async () => {
    const user = await memberOfB();
    const [cookie, otherCookie] = await Promise.all([
      sessionCookieFor(db.database.db, user),
      sessionCookieFor(db.database.db, user),
    ]);
    await withStreams(
      [openStream(b, { cookie }), openStream(b, { cookie: otherCookie })],
      async ([stream, other]) => {
        const { body } = await a.graph('mutation { logout }', {}, { cookie });
        expect(body).toEqual({ data: { logout: true } });
        await completes(stream as SseStream);
        await streamsOn(other as SseStream, b.workspace.id);
      },
    );
  });

  test('a password reset ends the account’s session streams; its token streams on', async () => {
    const user = await memberOfB();
    const link = await issueLink(db.database.db, 'reset', user, 3_600_000);
    await withStreams(
      [
        openStream(b, await sessionFor(db.database.db, user)),
        openStream(b, await bearerFor(db.database.db, user)),
      ],
      async ([session, token]) => {
        const { body } = await a.anonymous(RESET, { t: link.secret, p: 'a brand new passphrase' });
        expect(body.errors).toBeUndefined();
        await completes(session as SseStream);
        await streamsOn(token as SseStream, b.workspace.id);
      },
    );
  });

  test('changing an account’s role ends its streams, which reopen under the new role', async () => {
    const user = await memberOfB();
    await withStreams([openStream(b, await bearerFor(db.database.db, user))], async ([stream]) => {
      const { body } = await a.graph(SET_ROLE, { id: user.id, role: 'admin' }, b.adminHeaders);
      expect(body.errors).toBeUndefined();
      await completes(stream as SseStream);
    });
  });

  test('deactivating a workspace with the CLI ends every stream of it; another workspace streams on', async () => {
    const workspace = await createWorkspace(db.database.db);
    const [admin, user] = await Promise.all([
      createUser(db.database.db, workspace, { role: 'admin' }),
      createUser(db.database.db, workspace),
    ]);
    await withStreams(
      [
        openStream(b, await bearerFor(db.database.db, admin)),
        openStream(a, await sessionFor(db.database.db, user)),
        openStream(b, b.adminHeaders),
      ],
      async ([onB, onA, elsewhere]) => {
        const cli = await runSvc(
          ['workspace:deactivate', '-workspace', workspace.id, '-as', 'ops'],
          { SVC_DATABASE_URL: db.url },
        );
        expect(cli.code).toBe(0);
        await Promise.all([completes(onB as SseStream), completes(onA as SseStream)]);
        await streamsOn(elsewhere as SseStream, b.workspace.id);
      },
    );
  });
});

describe('a stream ends with its credential’s expiry', () => {
  test('a token expiring while its stream is open ends the stream at its expiry', async () => {
    const user = await memberOfB();
    const headers = await bearerFor(db.database.db, user, { ttlDays: 1 });
    const [row] = await db.database.sql<{ ms: number }[]>`
      update api_tokens set expires_at = now() + interval '2 seconds'
      where user_id = ${user.id} returning (extract(epoch from expires_at) * 1000)::float8 as ms`;
    const expiresAt = (row as { ms: number }).ms;
    await withStreams([openStream(b, headers)], async ([stream]) => {
      await completes(stream as SseStream);
      // Node's timers may fire a millisecond early; the stream never outlives the token.
      expect(Date.now()).toBeGreaterThanOrEqual(expiresAt - 5);
      expect(Date.now()).toBeLessThan(expiresAt + 2_000);
    });
  });
});
