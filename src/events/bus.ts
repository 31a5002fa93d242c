import { credentialLive } from '../auth/credentials.js';
import type { Actor } from '../context.js';
import type { Database } from '../db/client.js';
import type { Logger } from '../log.js';
import { parseRevocation, REVOCATIONS_CHANNEL, revokes } from './revocations.js';
import { EVENTS_CHANNEL, type EventNotice } from './service.js';
import { openSubscription, type Subscriber } from './subscription.js';
import { payloadObject } from './payload.js';
import { busLag, busNotices } from '../metrics/registry.js';

/** A notice as a subscriber receives it: the NOTIFY payload, `at` filled in when absent. */
export interface BusNotice extends Omit<EventNotice, 'at'> {
  at: Date;
}

export interface SubscribeOptions {
  /**
   * Who opened the subscription, as the request's credential showed it. Only notices of
   * its workspace reach it, and it ends when that credential is revoked (an
   * `announceRevocation` naming it, in any process) or expires (`actor.expiresAt`).
   */
  actor: Actor;
  /** Further filter (audience, token scopes); notices it refuses are never queued. */
  accept?: (notice: BusNotice) => boolean;
  /** Ends the subscription when aborted (the client went away, the operation was cancelled). */
  signal?: AbortSignal;
  /** Ends the subscription after this many milliseconds (SVC_STREAM_LIFETIME). */
  lifetimeMs?: number;
}

/**
 * One subscriber's notices, in commit order; ends on `return()`, its signal, lifetime,
 * its credential's revocation or expiry, or overflow.
 */
export interface Subscription extends AsyncIterableIterator<BusNotice> {
  /** Ends the subscription; a pending `next()` answers done. */
  close(): void;
}

export interface EventBus {
  subscribe(options: SubscribeOptions): Subscription;
  /** Subscribers open in this process. */
  size(): number;
  /** Ends every subscription (streams complete, clients reconnect elsewhere); new ones end at once. */
  endSubscriptions(): void;
  /** Ends every subscription and stops listening. Safe to call twice. */
  close(): Promise<void>;
}

export interface EventBusOptions {
  /** Notices one subscriber may have waiting; past it the subscriber is ended. @default 256 */
  maxQueue?: number;
}

/** Reads a NOTIFY payload; null when it is not one of ours. */
export function parseNotice(payload: string): BusNotice | null {
  const v = payloadObject(payload);
  if (!v) return null;
  if (typeof v.workspaceId !== 'string' || typeof v.id !== 'string' || typeof v.name !== 'string') {
    return null;
  }
  const at = typeof v.at === 'string' ? new Date(v.at) : new Date();
  return {
    workspaceId: v.workspaceId,
    id: v.id,
    name: v.name,
    audienceUserId: typeof v.audienceUserId === 'string' ? v.audienceUserId : null,
    subjectId: typeof v.subjectId === 'string' ? v.subjectId : null,
    at: Number.isNaN(at.getTime()) ? new Date() : at,
  };
}

/** The open subscribers of this process, by workspace. */
function createRegistry() {
  const byWorkspace = new Map<string, Set<Subscriber>>();
  let count = 0;
  return {
    add(subscriber: Subscriber): void {
      const { workspaceId } = subscriber.options.actor;
      let set = byWorkspace.get(workspaceId);
      if (!set) byWorkspace.set(workspaceId, (set = new Set()));
      set.add(subscriber);
      count += 1;
    },
    remove(subscriber: Subscriber): void {
      const { workspaceId } = subscriber.options.actor;
      const set = byWorkspace.get(workspaceId);
      if (!set?.delete(subscriber)) return;
      count -= 1;
      if (set.size === 0) byWorkspace.delete(workspaceId);
    },
    /** A copy, so subscribers may end while the caller walks it. */
    of: (workspaceId: string): Subscriber[] => [...(byWorkspace.get(workspaceId) ?? [])],
    all: (): Subscriber[] => [...byWorkspace.values()].flatMap((set) => [...set]),
    size: () => count,
  };
}

type Registry = ReturnType<typeof createRegistry>;

/** Hands each notice on `svc_events` to the subscribers of its workspace. */
function noticeHandler(registry: Registry, log: Logger) {
  return (payload: string): void => {
    const notice = parseNotice(payload);
    if (!notice) {
      log.warn({ channel: EVENTS_CHANNEL }, 'event notice unreadable, skipped');
      return;
    }
    busNotices.inc();
    busLag.observe(Math.max(0, Date.now() - notice.at.getTime()) / 1000);
    for (const subscriber of registry.of(notice.workspaceId)) subscriber.offer(notice);
  };
}

/** Ends the subscribers whose credential a notice on `svc_revocations` names. */
function revocationHandler(registry: Registry, log: Logger) {
  return (payload: string): void => {
    const revocation = parseRevocation(payload);
    if (!revocation) {
      log.warn({ channel: REVOCATIONS_CHANNEL }, 'revocation notice unreadable, skipped');
      return;
    }
    for (const subscriber of registry.of(revocation.workspaceId)) {
      if (revokes(revocation, subscriber.options.actor)) subscriber.close();
    }
  };
}

function endAll(registry: Registry): void {
  for (const subscriber of registry.all()) subscriber.close();
}

/**
 * LISTENs on `channel` (postgres.js keeps every channel on one connection). `onlisten` runs
 * at first and again after every reconnect, where it tells `relistened`.
 */
function listenOn(
  database: Database,
  channel: string,
  handle: (payload: string) => void,
  relistened: () => void,
) {
  let listens = 0;
  return database.sql.listen(channel, handle, () => {
    listens += 1;
    if (listens > 1) relistened();
  });
}

/**
 * What happens once the connection listens again on every channel. Notices sent while it
 * was down are lost; a revocation among them would leave a stream running on a dead
 * credential, so every open stream ends and its client reconnects, signing in anew.
 * postgres.js listens again channel by channel, a round trip apart: ending streams at the
 * first would let a client reconnect in between and have its new stream ended by the
 * second, so they end once, when the last channel listens. (3.4.9 queued a LISTEN a
 * channel for every failed attempt of an outage and answered them in a burst, a round
 * each, which ended streams opened meanwhile; patched to listen again once.)
 */
function afterReconnects(channels: readonly string[], log: Logger, registry: Registry) {
  const rounds = new Map(channels.map((channel) => [channel, 0]));
  return (channel: string) => () => {
    const round = (rounds.get(channel) ?? 0) + 1;
    rounds.set(channel, round);
    if ([...rounds.values()].some((other) => other < round)) return;
    const ended = registry.size();
    if (ended === 0) {
      log.debug({ channels }, 'event bus listening again');
      return;
    }
    log.info({ channels, ended }, 'event bus listening again, streams ended');
    endAll(registry);
  };
}

/**
 * A revocation that committed after the request read its credential but before the
 * subscriber was registered went by unseen; one read of the credential, made once the
 * subscriber listens, catches it.
 */
function confirmCredential(database: Database, log: Logger, subscriber: Subscriber): void {
  credentialLive(database.db, subscriber.options.actor).then(
    (live) => {
      if (!live) subscriber.close();
    },
    (error: unknown) => {
      log.warn({ err: error }, 'stream credential could not be checked, stream ended');
      subscriber.close();
    },
  );
}

/**
 * The process's event bus: one dedicated LISTEN connection (postgres.js opens it beside
 * the pool and listens again by itself after a reconnect) on two channels. `svc_events`
 * notices fan out to the subscribers of their workspace in this process; `svc_revocations`
 * notices end the subscribers whose credential they name. PostgreSQL delivers a notice at
 * commit to every listening process, so a change on any process sharing the database
 * reaches streams on all of them; a rolled-back change announces nothing.
 *
 * Each subscriber has a bounded queue; one that falls `maxQueue` notices behind is ended
 * rather than silently skipped, so its client reconnects and refetches instead of
 * missing a change.
 */
export async function startEventBus(
  database: Database,
  log: Logger,
  options: EventBusOptions = {},
): Promise<EventBus> {
  const maxQueue = options.maxQueue ?? 256;
  const registry = createRegistry();
  let ending = false;
  let closed: Promise<void> | undefined;

  const relistened = afterReconnects([EVENTS_CHANNEL, REVOCATIONS_CHANNEL], log, registry);
  const listeners = [
    await listenOn(
      database,
      EVENTS_CHANNEL,
      noticeHandler(registry, log),
      relistened(EVENTS_CHANNEL),
    ),
    await listenOn(
      database,
      REVOCATIONS_CHANNEL,
      revocationHandler(registry, log),
      relistened(REVOCATIONS_CHANNEL),
    ),
  ];

  function subscribe(opts: SubscribeOptions): Subscription {
    const { subscriber, iterator } = openSubscription(opts, {
      maxQueue,
      log,
      onEnd: (ended) => registry.remove(ended),
    });
    if (ending || opts.signal?.aborted) {
      subscriber.close();
      return iterator;
    }
    registry.add(subscriber);
    confirmCredential(database, log, subscriber);
    return iterator;
  }

  return {
    subscribe,
    size: () => registry.size(),
    endSubscriptions() {
      ending = true;
      endAll(registry);
    },
    close() {
      closed ??= (async () => {
        ending = true;
        endAll(registry);
        for (const listener of listeners) {
          try {
            await listener.unlisten();
          } catch (error) {
            log.warn({ err: error }, 'event bus could not stop listening');
          }
        }
      })();
      return closed;
    },
  };
}
