// SPEC 5's login budget (and SPEC 8.2's reset request budget) under concurrency, across
// real processes: two `svc serve` share one database, and a burst from one client address
// is spread over both. Each request
// carries a bearer token, so the anonymous per-address cap never refuses it first, and
// the tokens belong to several accounts, so no per-user slot does either.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { User } from '../../src/users/tables.js';
import { serveProcesses } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createUser, createWorkspace, PASSWORD, tokenFor } from '../support/factories.js';

const LOGIN = 'mutation($e:String!,$p:String!){login(email:$e,password:$p){me{id}}}';
const REQUEST_RESET = 'mutation($e:String!){requestPasswordReset(email:$e)}';
const ACCOUNTS = 8;

let db: TestDatabase;
const serveProcess = serveProcesses();
let urls: string[];
let member: User;
let tokens: Record<string, string>[];

async function serve(): Promise<string> {
  const served = await serveProcess({
    SVC_DATABASE_URL: db.url,
    // Each test speaks for an address of its own, through a trusted proxy on loopback.
    SVC_TRUSTED_PROXIES: '127.0.0.1/32',
  });
  return served.url;
}

beforeAll(async () => {
  db = await createTestDatabase();
  urls = await Promise.all([serve(), serve()]);
  const workspace = await createWorkspace(db.database.db);
  member = await createUser(db.database.db, workspace);
  const callers = await Promise.all(
    Array.from({ length: ACCOUNTS }, () => createUser(db.database.db, workspace)),
  );
  tokens = await Promise.all(
    callers.map(async (caller) => bearer(await tokenFor(db.database.db, caller))),
  );
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

interface Answer {
  reason: string | undefined;
  retryAfter: unknown;
  signedIn: boolean;
}

/** One sign-in from `address`, the `i`th of a burst: processes and tokens alternate. */
async function login(address: string, i: number, password: string): Promise<Answer> {
  const response = await fetch(`${urls[i % 2]}/api/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-forwarded-for': address,
      ...tokens[i % ACCOUNTS],
    },
    body: JSON.stringify({ query: LOGIN, variables: { e: member.email, p: password } }),
  });
  const body = (await response.json()) as {
    data: { login: unknown } | null;
    errors?: { extensions: { reason?: string; retryAfter?: unknown } }[];
  };
  const extensions = body.errors?.[0]?.extensions;
  return {
    reason: extensions?.reason,
    retryAfter: extensions?.retryAfter,
    signedIn: Boolean(body.data?.login),
  };
}

function burst(address: string, passwords: string[], offset = 0): Promise<Answer[]> {
  return Promise.all(passwords.map((password, i) => login(address, offset + i, password)));
}

const wrong = (n: number) => Array.from({ length: n }, (_v, i) => `wrong password ${i}`);
const right = (n: number) => Array.from({ length: n }, () => PASSWORD);
const count = (answers: Answer[], reason: string) =>
  answers.filter((answer) => answer.reason === reason).length;

describe('the login failure budget across two server processes', () => {
  test('of 40 parallel wrong passwords from one address, 10 are checked and 30 refused with retryAfter', async () => {
    const answers = await burst('203.0.113.1', wrong(40));
    expect(count(answers, 'credentials_invalid')).toBe(10);
    const refused = answers.filter((answer) => answer.reason === 'rate_limited');
    expect(refused).toHaveLength(30);
    for (const { retryAfter } of refused) {
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
  }, 60_000);

  test('successful sign-ins in parallel with failures never consume the budget', async () => {
    const address = '203.0.113.2';
    // Ten at once: each holds one attempt while checked, so all ten are.
    const mixed = await burst(address, [...right(5), ...wrong(5)]);
    expect(mixed.filter((answer) => answer.signedIn)).toHaveLength(5);
    expect(count(mixed, 'credentials_invalid')).toBe(5);
    // Five more successes, then five more failures: the budget had room for exactly those.
    const successes = await burst(address, right(5), 1);
    expect(successes.every((answer) => answer.signedIn)).toBe(true);
    expect(count(await burst(address, wrong(5), 1), 'credentials_invalid')).toBe(5);
    // Ten failures spent: now even the right password waits.
    expect((await login(address, 0, PASSWORD)).reason).toBe('rate_limited');
  }, 60_000);
});

describe('the reset request budget across two server processes', () => {
  test('of 12 parallel reset requests from one address, SVC_RESET_ATTEMPTS (3) are answered', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_v, i) => {
        const response = await fetch(`${urls[i % 2]}/api/graphql`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-forwarded-for': '203.0.113.3',
            ...tokens[i % ACCOUNTS],
          },
          body: JSON.stringify({ query: REQUEST_RESET, variables: { e: member.email } }),
        });
        const body = (await response.json()) as {
          data: { requestPasswordReset: boolean } | null;
          errors?: { extensions: { reason?: string } }[];
        };
        return body.data?.requestPasswordReset ?? body.errors?.[0]?.extensions.reason;
      }),
    );
    expect(answers.filter((answer) => answer === true)).toHaveLength(3);
    expect(answers.filter((answer) => answer === 'rate_limited')).toHaveLength(9);
  }, 60_000);
});
