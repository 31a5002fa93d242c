// One caller cannot stall every workspace (SPEC 8.1, docs/complexity.md, docs/scaling.md):
// searches and counts cost what the database pays, a caller's statements hold at most
// half the pool while anyone else is about, and a request's statements end with it
// (deadline or client gone).
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { ReservedSql } from 'postgres';
import { FILTER_COUNT, SEARCH, STATEMENT } from '../../src/graph/costs.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
/** A member of another workspace. */
let other: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService();
  const workspace = await createWorkspace(svc.db.database.db);
  other = bearer(
    await tokenFor(svc.db.database.db, await createUser(svc.db.database.db, workspace)),
  );
});

afterAll(() => svc.stop());

/** Holds an exclusive lock on contacts: every statement reading them waits until released. */
async function lockContacts(target: TestService): Promise<() => Promise<void>> {
  const holder: ReservedSql = await target.db.database.sql.reserve();
  await holder`begin`;
  await holder`lock table contacts in access exclusive mode`;
  return async () => {
    await holder`rollback`;
    holder.release();
  };
}

/** Statements of the service waiting for the lock, once there are `count` (bounded wait). */
async function waitingReach(target: TestService, count: number): Promise<number> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const [row] = await target.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    const n = row?.n ?? 0;
    if (n === count || Date.now() > deadline) return n;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const SEARCH_WITH_TOTAL = 'contactPage(q: "ada", limit: 1) { total }';

describe('the cost of what the database pays', () => {
  test('2,400 aliased searches with their counts are refused before any statement runs', async () => {
    const aliases = Array.from({ length: 2400 }, (_, i) => `a${i}: ${SEARCH_WITH_TOTAL}`);
    const release = await lockContacts(svc);
    try {
      // Contacts are locked: an answer at all proves no search ran.
      const { status, body } = await svc.graph(`{ ${aliases.join(' ')} }`);
      const complexity = 2400 * (STATEMENT + SEARCH + FILTER_COUNT + 1);
      expect(status).toBe(429);
      expect(body).toEqual({
        data: null,
        errors: [
          {
            message: `operation has complexity ${complexity}, which exceeds the limit of 2500`,
            extensions: {
              code: 'COMPLEXITY_LIMIT_EXCEEDED',
              reason: 'complexity_limit_exceeded',
              meta: { complexity, limit: 2500 },
            },
          },
        ],
      });
    } finally {
      await release();
    }
  });

  // Two searches with counts (2 × 1006), a page of 200 (405) and one of 39 (83): 2500.
  const atLimit = `{
    a: ${SEARCH_WITH_TOTAL} b: ${SEARCH_WITH_TOTAL}
    contacts(first: 200) { edges { node { id } } }
    contactPage(limit: 39) { items { id } }
  }`;

  test('an operation costing exactly 2500 runs', async () => {
    const { status, body } = await svc.graph(atLimit);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
  });

  test('one point more is refused with its complexity', async () => {
    const { body } = await svc.graph(atLimit.replace('{ id } }\n  }', '{ id } } __typename\n  }'));
    expect(body.errors?.[0]?.extensions.meta).toEqual({ complexity: 2501, limit: 2500 });
  });

  test('a page that is not searched counts the stored total as one statement', async () => {
    const { body } = await svc.graph(
      `{ ${Array.from({ length: 500 }, (_, i) => `p${i}: contactPage(limit: 1) { total }`).join(' ')} }`,
    );
    expect(body.errors?.[0]?.extensions.meta).toEqual({
      complexity: 500 * (STATEMENT + STATEMENT + 1),
      limit: 2500,
    });
  });
});

describe('a busy caller and everyone else', () => {
  /** Starts 20 searches of the first caller's, each waiting for the lock; answers their statuses. */
  function searches(): Promise<number[]> {
    return Promise.all(
      Array.from({ length: 20 }, () =>
        svc.graph(`{ ${SEARCH_WITH_TOTAL} }`).then(({ status }) => status),
      ),
    );
  }

  /** Another workspace's `me`, answered without errors: its time in ms. */
  async function othersMe(): Promise<number> {
    const started = performance.now();
    const { body } = await svc.graph('{ me { id } }', undefined, other);
    expect(body.errors).toBeUndefined();
    return performance.now() - started;
  }

  /**
   * While the first caller's 20 searches wait for a lock, `waiting` of its statements wait
   * in PostgreSQL (the rest in its own queue, not the pool's) and another workspace's
   * `me` answers within a second; then all of them answer.
   */
  async function busyWhileOtherAsks(waiting: number): Promise<void> {
    const release = await lockContacts(svc);
    const statuses = searches();
    try {
      expect(await waitingReach(svc, waiting)).toBe(waiting);
      expect(await othersMe()).toBeLessThan(1_000);
    } finally {
      await release();
    }
    expect(await statuses).toEqual(Array(20).fill(200));
  }

  test("a caller alone holds all but two connections, and another workspace's me still answers", async () => {
    // Nobody else has asked anything lately: eight of the ten connections.
    await busyWhileOtherAsks(8);
  });

  test("a caller saturating its slots with searches leaves the pool to another workspace's me", async () => {
    // Another caller asked just now: the first is held to its share, four connections of
    // five (the fifth is kept for statements beside its transactions).
    expect(await othersMe()).toBeLessThan(1_000);
    await busyWhileOtherAsks(4);
  });
});

describe('statements end with their request', () => {
  test('a client going away cancels the statement its request started', async () => {
    const release = await lockContacts(svc);
    try {
      const client = new AbortController();
      const gone = svc
        .request(`/api/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...svc.adminHeaders },
          body: JSON.stringify({ query: `{ ${SEARCH_WITH_TOTAL} }` }),
          signal: client.signal,
        })
        .catch((error: unknown) => error);
      // A search and its total are one statement (src/contacts/queries.ts).
      expect(await waitingReach(svc, 1)).toBe(1);
      client.abort();
      await gone;
      expect(await waitingReach(svc, 0)).toBe(0);
    } finally {
      await release();
    }
  });

  let quick: TestService;

  beforeAll(async () => {
    quick = await startTestService({ env: { SVC_GRAPH_OPERATION_TIMEOUT: '500ms' } });
  });

  afterAll(() => quick.stop());

  test('the operation deadline cancels running and queued statements, so no write lands after its answer', async () => {
    const release = await lockContacts(quick);
    try {
      const writes = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          quick.graph(`mutation { createContact(input: { name: "Late ${i}" }) { id } }`),
        ),
      );
      for (const { status, body } of writes) {
        expect(status).toBe(429);
        expect(body.errors?.[0]?.extensions.reason).toBe('operation_deadline_exceeded');
      }
      expect(await waitingReach(quick, 0)).toBe(0);
    } finally {
      await release();
    }
    const [row] = await quick.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from contacts where name like 'Late %'`;
    expect(row?.n).toBe(0);
  });
});
