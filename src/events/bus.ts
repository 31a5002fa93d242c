import type { Database } from '../db/client.js';
import type { Logger } from '../log.js';
import { EVENTS_CHANNEL, type EventNotice } from './service.js';

/** A notice as a subscriber receives it: the NOTIFY payload, `at` filled in when absent. */
export interface BusNotice extends Omit<EventNotice, 'at'> {
  at: Date;
}

export interface SubscribeOptions {
  /** Only notices of this workspace reach the subscriber. */
  workspaceId: string;
  /** Further filter (audience, token scopes); notices it refuses are never queued. */
  accept?: (notice: BusNotice) => boolean;
  /** Ends the subscription when aborted (the client went away, the operation was cancelled). */
  signal?: AbortSignal;
  /** Ends the subscription after this many milliseconds (SVC_STREAM_LIFETIME). */
  lifetimeMs?: number;
}

/** One subscriber's notices, in commit order; ends on `return()`, its signal, lifetime or overflow. */
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
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
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

interface Subscriber {
  offer(notice: BusNotice): void;
  close(): void;
}

/**
 * The process's event bus: one dedicated LISTEN connection on `svc_events` (postgres.js
 * opens it beside the pool and listens again by itself after a reconnect), fanning each
 * notice out to the subscribers of its workspace in this process. PostgreSQL delivers a
 * notice at commit to every listening process, so a write on any process sharing the
 * database reaches streams on all of them; a rolled-back write announces nothing.
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
  const byWorkspace = new Map<string, Set<Subscriber>>();
  let count = 0;
  let ending = false;
  let closed: Promise<void> | undefined;

  function deliver(payload: string): void {
    const notice = parseNotice(payload);
    if (!notice) {
      log.warn({ channel: EVENTS_CHANNEL }, 'event notice unreadable, skipped');
      return;
    }
    const subscribers = byWorkspace.get(notice.workspaceId);
    if (!subscribers) return;
    for (const subscriber of [...subscribers]) subscriber.offer(notice);
  }

  let listening = 0;
  const listener = await database.sql.listen(EVENTS_CHANNEL, deliver, () => {
    // Called at first and again after every reconnect; notices sent while the connection
    // was down are lost (there is no replay: clients refetch when they reconnect).
    listening += 1;
    if (listening > 1) log.info({ channel: EVENTS_CHANNEL }, 'event bus listening again');
  });

  function subscribe(opts: SubscribeOptions): Subscription {
    const queue: BusNotice[] = [];
    let waiting: ((result: IteratorResult<BusNotice>) => void) | null = null;
    let done = false;
    let timer: NodeJS.Timeout | undefined;

    const subscriber: Subscriber = {
      offer(notice) {
        if (done) return;
        if (opts.accept && !opts.accept(notice)) return;
        if (waiting) {
          const resolve = waiting;
          waiting = null;
          resolve({ value: notice, done: false });
          return;
        }
        if (queue.length >= maxQueue) {
          log.info({ workspaceId: opts.workspaceId, maxQueue }, 'event subscriber too slow, ended');
          end();
          return;
        }
        queue.push(notice);
      },
      close: () => end(),
    };

    function onAbort() {
      end();
    }

    function end(): void {
      if (done) return;
      done = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      const set = byWorkspace.get(opts.workspaceId);
      if (set?.delete(subscriber)) {
        count -= 1;
        if (set.size === 0) byWorkspace.delete(opts.workspaceId);
      }
      // Notices already queued are dropped: the stream is over and the client refetches.
      queue.length = 0;
      if (waiting) {
        const resolve = waiting;
        waiting = null;
        resolve({ value: undefined, done: true });
      }
    }

    const iterator: Subscription = {
      next() {
        if (queue.length > 0) {
          return Promise.resolve({ value: queue.shift() as BusNotice, done: false });
        }
        if (done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          waiting = resolve;
        });
      },
      return() {
        end();
        return Promise.resolve({ value: undefined, done: true });
      },
      throw(error?: unknown) {
        end();
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      },
      close: end,
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };

    if (ending || opts.signal?.aborted) {
      done = true;
      return iterator;
    }
    let set = byWorkspace.get(opts.workspaceId);
    if (!set) byWorkspace.set(opts.workspaceId, (set = new Set()));
    set.add(subscriber);
    count += 1;
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.lifetimeMs !== undefined) {
      timer = setTimeout(end, opts.lifetimeMs);
      timer.unref();
    }
    return iterator;
  }

  function endSubscriptions(): void {
    ending = true;
    for (const set of [...byWorkspace.values()]) {
      for (const subscriber of [...set]) subscriber.close();
    }
  }

  return {
    subscribe,
    size: () => count,
    endSubscriptions,
    close() {
      closed ??= (async () => {
        endSubscriptions();
        try {
          await listener.unlisten();
        } catch (error) {
          log.warn({ err: error }, 'event bus could not stop listening');
        }
      })();
      return closed;
    },
  };
}
