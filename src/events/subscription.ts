import { MAX_TIMER_MS } from '../config/duration.js';
import type { Logger } from '../log.js';
import type { BusNotice, SubscribeOptions, Subscription } from './bus.js';

/** One open subscription as the bus sees it. */
export interface Subscriber {
  readonly options: SubscribeOptions;
  /** Queues or hands over a notice of its workspace (the subscriber's filter applies). */
  offer(notice: BusNotice): void;
  /** Ends it; a pending `next()` answers done. */
  close(): void;
}

/**
 * Milliseconds until a subscription must end: its lifetime or its credential's expiry,
 * whichever comes first (at once when the credential has already expired); undefined when
 * neither applies. Capped at the longest delay Node's timers honour.
 */
export function endsAfterMs(
  options: Pick<SubscribeOptions, 'actor' | 'lifetimeMs'>,
  now = Date.now(),
): number | undefined {
  const limits: number[] = [];
  if (options.lifetimeMs !== undefined) limits.push(options.lifetimeMs);
  const expiresAt = options.actor.expiresAt;
  if (expiresAt) limits.push(expiresAt.getTime() - now);
  if (limits.length === 0) return undefined;
  return Math.min(MAX_TIMER_MS, Math.max(0, Math.min(...limits)));
}

export interface SubscriptionDeps {
  maxQueue: number;
  log: Logger;
  /** Called once when the subscription ends, however it ends. */
  onEnd(subscriber: Subscriber): void;
}

/** Iterator state of one subscription: its queue and the reader waiting on it. */
interface Pipe {
  queue: BusNotice[];
  waiting: ((result: IteratorResult<BusNotice>) => void) | null;
  done: boolean;
}

function settle(pipe: Pipe, result: IteratorResult<BusNotice>): boolean {
  const resolve = pipe.waiting;
  if (!resolve) return false;
  pipe.waiting = null;
  resolve(result);
  return true;
}

function iteratorOf(pipe: Pipe, end: () => void): Subscription {
  const iterator: Subscription = {
    next() {
      if (pipe.queue.length > 0) {
        return Promise.resolve({ value: pipe.queue.shift() as BusNotice, done: false });
      }
      if (pipe.done) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => {
        pipe.waiting = resolve;
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
  return iterator;
}

/**
 * A subscriber and the iterator its stream reads, armed with its signal and its timer
 * (lifetime or credential expiry). It ends on `close()`, `return()`, the signal, the timer,
 * or a queue overflow; notices still queued are then dropped (the client refetches).
 */
export function openSubscription(
  options: SubscribeOptions,
  deps: SubscriptionDeps,
): { subscriber: Subscriber; iterator: Subscription } {
  const pipe: Pipe = { queue: [], waiting: null, done: false };
  let timer: NodeJS.Timeout | undefined;

  function end(): void {
    if (pipe.done) return;
    pipe.done = true;
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', end);
    pipe.queue.length = 0;
    settle(pipe, { value: undefined, done: true });
    deps.onEnd(subscriber);
  }

  const subscriber: Subscriber = {
    options,
    offer(notice) {
      if (pipe.done || (options.accept && !options.accept(notice))) return;
      if (settle(pipe, { value: notice, done: false })) return;
      if (pipe.queue.length >= deps.maxQueue) {
        const { workspaceId } = options.actor;
        deps.log.info({ workspaceId, maxQueue: deps.maxQueue }, 'event subscriber too slow, ended');
        end();
        return;
      }
      pipe.queue.push(notice);
    },
    close: end,
  };

  options.signal?.addEventListener('abort', end, { once: true });
  const afterMs = endsAfterMs(options);
  if (afterMs !== undefined) {
    timer = setTimeout(end, afterMs);
    timer.unref();
  }
  return { subscriber, iterator: iteratorOf(pipe, end) };
}
