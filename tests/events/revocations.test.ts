// Which streams a revocation ends, and when a stream's own timer ends it: rules alone,
// no database.
import { describe, expect, test } from '@jest/globals';
import { parseRevocation, revokes, type Revocation } from '../../src/events/revocations.js';
import { endsAfterMs } from '../../src/events/subscription.js';
import { actorOf } from './actors.js';

const workspaceId = '00000000-0000-4000-8000-000000000001';
const userId = '00000000-0000-4000-8000-000000000002';
const tokenActor = actorOf({
  workspaceId,
  userId,
  token: { id: 'token-1', name: 'ci', scopes: null },
});
const sessionActor = actorOf({ workspaceId, userId, sessionId: 'session-1' });

describe('revokes', () => {
  test.each<[string, Revocation, boolean, boolean]>([
    ['the whole workspace', { workspaceId }, true, true],
    ['another workspace', { workspaceId: 'elsewhere' }, false, false],
    ['the account', { workspaceId, userId }, true, true],
    ['another account', { workspaceId, userId: 'someone else' }, false, false],
    ['the account’s sessions only', { workspaceId, userId, sessionsOnly: true }, false, true],
    ['the token', { workspaceId, tokenId: 'token-1' }, true, false],
    ['another token', { workspaceId, tokenId: 'token-2' }, false, false],
    ['the session', { workspaceId, sessionId: 'session-1' }, false, true],
    ['another session', { workspaceId, sessionId: 'session-2' }, false, false],
  ])('naming %s ends the token stream: %s, the session stream: %s', (_l, r, token, session) => {
    expect([revokes(r, tokenActor), revokes(r, sessionActor)]).toEqual([token, session]);
  });
});

describe('parseRevocation', () => {
  test('reads what announceRevocation writes', () => {
    const revocation = { workspaceId, userId, sessionsOnly: true };
    expect(parseRevocation(JSON.stringify(revocation))).toEqual(revocation);
  });

  test.each(['not json', 'null', '{}', '{"workspaceId":1}', `{"workspaceId":"w","tokenId":7}`])(
    'refuses %s',
    (payload) => {
      expect(parseRevocation(payload)).toBeNull();
    },
  );
});

describe('endsAfterMs', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');

  test('a credential expiring before the lifetime ends the stream at its expiry', () => {
    const actor = { ...tokenActor, expiresAt: new Date(now + 2_000) };
    expect(endsAfterMs({ actor, lifetimeMs: 300_000 }, now)).toBe(2_000);
  });

  test('a credential outliving the lifetime leaves the lifetime in charge', () => {
    const actor = { ...sessionActor, expiresAt: new Date(now + 30 * 86_400_000) };
    expect(endsAfterMs({ actor, lifetimeMs: 300_000 }, now)).toBe(300_000);
  });

  test('an expiry already past ends the stream at once', () => {
    const actor = { ...tokenActor, expiresAt: new Date(now - 1) };
    expect(endsAfterMs({ actor, lifetimeMs: 300_000 }, now)).toBe(0);
  });

  test('without a lifetime a far expiry is capped at the longest timer Node honours', () => {
    const actor = { ...sessionActor, expiresAt: new Date(now + 30 * 86_400_000) };
    expect(endsAfterMs({ actor }, now)).toBe(2_147_483_647);
    expect(endsAfterMs({ actor: tokenActor }, now)).toBeUndefined();
  });
});
