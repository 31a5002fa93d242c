import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import { recordEvent, type NewEvent } from '../../src/events/service.js';
import type { TestService } from '../support/service.js';

export const CORE_EVENT = 'subscription { coreEvent { id name subjectId at } }';

export interface Frame {
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: Headers;
  /** The next frame (`next`, `complete`), or null once the body ended. */
  frame(): Promise<Frame | null>;
  /** The payload of the next `next` frame; fails on anything else. */
  next(): Promise<{ data?: Record<string, unknown>; errors?: unknown[] }>;
  /** Resolves when the response body has ended (the server closed the stream). */
  ended: Promise<void>;
  /** Goes away like a client closing its tab. */
  close(): void;
}

/** A service to open a stream on: its URL (over a socket) or a test service (in-process). */
export type StreamTarget = string | Pick<TestService, 'request'>;

/**
 * Opens a subscription over Server-Sent Events (SPEC 4.1) and reads its frames as they
 * arrive: over a socket to a URL, or in-process to a test service. Either resolves once
 * the server has sent the answer's head.
 */
export async function openStream(
  target: StreamTarget,
  headers: Record<string, string>,
  query = CORE_EVENT,
): Promise<SseStream> {
  const abort = new AbortController();
  const init: RequestInit = {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ query }),
    signal: abort.signal,
  };
  const response =
    typeof target === 'string'
      ? await fetch(`${target}/api/graphql`, init)
      : await target.request('/api/graphql', init);
  const frames: (Frame | null)[] = [];
  const waiting: ((frame: Frame | null) => void)[] = [];
  let done = false;
  let finished!: () => void;
  const ended = new Promise<void>((resolve) => (finished = resolve));

  function push(frame: Frame | null) {
    const waiter = waiting.shift();
    if (waiter) waiter(frame);
    else frames.push(frame);
  }

  void (async () => {
    let buffer = '';
    const decoder = new TextDecoder();
    try {
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      for (;;) {
        const { done: over, value } = await reader.read();
        if (over) break;
        buffer += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':') || line === '') continue; // keep-alive comment
            const colon = line.indexOf(':');
            const field = colon === -1 ? line : line.slice(0, colon);
            const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') event = value;
            if (field === 'data') data.push(value);
          }
          if (data.length > 0 || event !== 'message') push({ event, data: data.join('\n') });
        }
      }
    } catch {
      // aborted by close()
    }
    push(null);
    done = true;
    finished();
  })();

  const stream: SseStream = {
    status: response.status,
    headers: response.headers,
    frame() {
      if (frames.length > 0) return Promise.resolve(frames.shift() as Frame | null);
      if (done) return Promise.resolve(null);
      return new Promise((resolve) => waiting.push(resolve));
    },
    async next() {
      const frame = await stream.frame();
      if (frame?.event !== 'next')
        throw new Error(`expected a next frame, got ${JSON.stringify(frame)}`);
      return JSON.parse(frame.data) as { data?: Record<string, unknown>; errors?: unknown[] };
    },
    ended,
    close: () => abort.abort(),
  };
  return stream;
}

/** The frame a server sends when it ends a stream in order. */
export const COMPLETE: Frame = { event: 'complete', data: '' };

/**
 * Waits for the server to end `stream` and answers the frame it ended with (`COMPLETE`
 * when it ended in order); fails once `withinMs` pass with the stream still open. A bound,
 * not a pause: it answers as soon as the stream ends.
 */
export async function endOf(stream: SseStream, withinMs: number): Promise<Frame | null> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`stream still open after ${withinMs} ms`)), withinMs);
  });
  try {
    await Promise.race([stream.ended, bound]);
  } finally {
    clearTimeout(timer);
  }
  return stream.frame();
}

/**
 * Records an event in a transaction of its own, committed (or rolled back) on return; a
 * fresh subject id when the test names none.
 */
export async function record(
  db: Db,
  event: Omit<NewEvent, 'subjectId'> & { subjectId?: string },
  options: { rollback?: boolean } = {},
) {
  const rolledBack = new Error('rolled back on purpose');
  let id = '';
  try {
    await db.transaction(async (tx) => {
      id = await recordEvent(tx, { ...event, subjectId: event.subjectId ?? randomUUID() });
      if (options.rollback) throw rolledBack;
    });
  } catch (error) {
    if (error !== rolledBack) throw error;
  }
  return id;
}
