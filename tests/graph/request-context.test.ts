// The request's context: built once where the credential is resolved, it carries the
// caller's workspace and the request's loaders; services narrow it with signedIn.
import { describe, expect, test } from '@jest/globals';
import { createContext, signedIn, type Actor, type Context } from '../../src/context.js';
import type { Db } from '../../src/db/client.js';
import { AppError } from '../../src/errors.js';
import { loaderFamily } from '../../src/loaders.js';

const actor: Actor = {
  userId: 'u1',
  workspaceId: 'w1',
  role: 'member',
  capabilities: new Set(),
  token: null,
  sessionId: null,
};
const db = {} as Db;

function contextFor(who: Actor | null): Context {
  const operation = new AbortController();
  return createContext({
    config: {} as Context['config'],
    database: { db } as Context['database'],
    log: {} as Context['log'],
    requestId: 'r',
    actor: who,
    access: {} as Context['access'],
    clientAddress: '127.0.0.1',
    headers: new Headers(),
    responseCookies: [],
    signal: operation.signal,
    events: {} as Context['events'],
    cancel: () => operation.abort(),
  });
}

function reasonOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof AppError ? error.reason : String(error);
  }
  return undefined;
}

describe('the request context', () => {
  test("carries the signed-in caller's workspace", () => {
    const ctx = contextFor(actor);
    expect(ctx.workspaceId).toBe('w1');
    expect(signedIn(ctx).workspaceId).toBe('w1');
    expect(signedIn(ctx).actor.userId).toBe('u1');
  });

  test('an anonymous caller has no workspace, and a service refuses it', () => {
    const ctx = contextFor(null);
    expect(ctx.workspaceId).toBeNull();
    expect(reasonOf(() => signedIn(ctx))).toBe('authentication_required');
    expect(reasonOf(() => ctx.loaders.of(() => ({})))).toBe('authentication_required');
  });

  test('its id, logger, signal and headers are made on first read, once each', () => {
    const made: string[] = [];
    const operation = new AbortController();
    const make =
      <T>(name: string, value: T) =>
      (): T => {
        made.push(name);
        return value;
      };
    const headers = new Headers({ 'accept-language': 'fr' });
    const log = {} as Context['log'];
    const ctx = createContext({
      config: {} as Context['config'],
      database: { db } as Context['database'],
      log: make('log', log),
      requestId: make('requestId', 'r-late'),
      actor,
      access: {} as Context['access'],
      clientAddress: '127.0.0.1',
      headers: make('headers', headers),
      responseCookies: [],
      signal: make('signal', operation.signal),
      events: {} as Context['events'],
      cancel: () => operation.abort(),
    });
    expect(made).toEqual([]);
    expect([ctx.requestId, ctx.requestId]).toEqual(['r-late', 'r-late']);
    expect(ctx.log).toBe(log);
    expect(ctx.signal).toBe(operation.signal);
    expect(ctx.headers.get('accept-language')).toBe('fr');
    expect(ctx.log).toBe(log);
    expect(made).toEqual(['requestId', 'log', 'signal', 'headers']);
  });

  test('every context has the same shape: what it makes late is read through its prototype', () => {
    // An accessor of the context's own gives each context a hidden class of its own, in
    // V8's old generation, which keeps the request's young objects past every scavenge
    // (docs/performance.md, issue 29 sixth pass).
    const [first, second] = [contextFor(actor), contextFor(null)];
    for (const name of ['requestId', 'log', 'signal', 'headers']) {
      expect(Object.getOwnPropertyDescriptor(first, name)).toBeUndefined();
      expect(typeof Object.getOwnPropertyDescriptor(Object.getPrototypeOf(first), name)?.get).toBe(
        'function',
      );
    }
    expect(Object.getPrototypeOf(first)).toBe(Object.getPrototypeOf(second));
    expect(Object.keys(first)).toEqual(Object.keys(second));
  });

  test('read through an object made from it (Object.create, as Yoga hands it on), it answers the same', () => {
    const ctx = contextFor(actor);
    const handed = Object.create(ctx) as Context;
    expect(handed.requestId).toBe('r');
    expect(handed.signal).toBe(ctx.signal);
    expect(handed.headers).toBe(ctx.headers);
    expect(handed.log).toBe(ctx.log);
    expect(handed.workspaceId).toBe('w1');
  });

  test("a factory runs once per request, with the request's database and workspace", () => {
    const made: [Db, string][] = [];
    const factory = (database: Db, workspaceId: string) => {
      made.push([database, workspaceId]);
      return { made: made.length };
    };
    const first = contextFor(actor);
    expect(first.loaders.of(factory)).toBe(first.loaders.of(factory));
    const second = contextFor(actor);
    expect(second.loaders.of(factory)).not.toBe(first.loaders.of(factory));
    expect(made).toEqual([
      [db, 'w1'],
      [db, 'w1'],
    ]);
  });
});

describe('loaderFamily', () => {
  test('batches the keys of a tick into one read per argument list, grouped in key order', async () => {
    const reads: [readonly string[], number][] = [];
    const family = loaderFamily(
      async (keys, limit: number) => {
        reads.push([keys, limit]);
        return keys.flatMap((key) => [`${key}:1`, `${key}:2`].slice(0, limit)).reverse();
      },
      (row) => row.split(':')[0]!,
    );
    const [a, b, one] = await Promise.all([
      family(2).load('a'),
      family(2).load('b'),
      family(1).load('a'),
    ]);
    expect(a).toEqual(['a:2', 'a:1']);
    expect(b).toEqual(['b:2', 'b:1']);
    expect(one).toEqual(['a:1']);
    expect(reads).toEqual([
      [['a', 'b'], 2],
      [['a'], 1],
    ]);
    expect(family(2)).toBe(family(2));
  });
});
