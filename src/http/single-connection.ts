import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { useGraphQLSSE } from '@graphql-yoga/plugin-graphql-sse';
import type { Plugin } from 'graphql-yoga';
import type { Actor, Context } from '../context.js';

/**
 * graphql-sse's single-connection mode (its PROTOCOL.md): `PUT` reserves a stream and
 * answers its token, a `GET` (or `POST`) with `Accept: text/event-stream` and the token
 * opens that stream, `POST`s with the token run operations whose results travel on it,
 * and `DELETE ?operationId=` stops one. The token travels in this header or `?token=`.
 */
export const STREAM_TOKEN_HEADER = 'x-graphql-event-stream-token';
const STREAM_TOKEN_QUERY = 'token';

/** What a single-connection request asks for; null for every other graph request. */
export type SingleConnectionStep =
  | { kind: 'reserve' }
  | { kind: 'connect'; token: string }
  | { kind: 'operate'; token: string }
  | { kind: 'stop'; token: string };

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Classifies a request of /api/graphql: a PUT, a DELETE, or a request carrying a stream
 * token belongs to single-connection mode. The distinct-connections mode (one stream per
 * operation, no token) stays with Yoga's own SSE. "Connect" is graphql-sse's own test: an
 * Accept of exactly `text/event-stream`.
 */
export function singleConnectionStep(
  req: IncomingMessage,
  url: () => URL,
): SingleConnectionStep | null {
  if (req.method === 'PUT') return { kind: 'reserve' };
  const token =
    headerValue(req.headers[STREAM_TOKEN_HEADER]) ??
    // The URL is parsed only for a query string: most requests have none.
    (req.url?.includes('?') ? url().searchParams.get(STREAM_TOKEN_QUERY) : null) ??
    undefined;
  if (req.method === 'DELETE') return { kind: 'stop', token: token ?? '' };
  if (!token) return null;
  if (headerValue(req.headers.accept) === 'text/event-stream') return { kind: 'connect', token };
  return { kind: 'operate', token };
}

/** The credential a reservation belongs to: the same account, session or token. */
function ownerOf(actor: Actor): string {
  return `${actor.userId}/${actor.sessionId ?? ''}/${actor.token?.id ?? ''}`;
}

interface Reservation {
  owner: string;
  userId: string;
  opened: boolean;
  timer: NodeJS.Timeout;
}

export interface StreamReservationsOptions {
  /** Reservations (open or not) one user may hold at once: SVC_STREAMS_PER_USER. */
  perUser: number;
  /** How long a reservation waits for its stream to open before it is dropped. */
  openWithinMs: number;
  /** Called with the token of a reservation dropped unopened, to free its stream. */
  onExpire(token: string): void;
}

/**
 * The single-connection streams of this process, each bound to the credential that
 * reserved it: another caller presenting the token finds nothing. A reservation is
 * dropped when its stream closes, or unopened after `openWithinMs`. In memory, like the
 * streams themselves: a client in this mode must reach the same process throughout.
 */
export function createStreamReservations(options: StreamReservationsOptions) {
  const byToken = new Map<string, Reservation>();
  const byUser = new Map<string, number>();

  function drop(token: string): boolean {
    const reservation = byToken.get(token);
    if (!reservation) return false;
    clearTimeout(reservation.timer);
    byToken.delete(token);
    const count = (byUser.get(reservation.userId) ?? 1) - 1;
    if (count > 0) byUser.set(reservation.userId, count);
    else byUser.delete(reservation.userId);
    return true;
  }

  return {
    /** A new token for `actor`, or null when the user holds `perUser` reservations. */
    reserve(actor: Actor): string | null {
      const held = byUser.get(actor.userId) ?? 0;
      if (held >= options.perUser) return null;
      const token = randomUUID();
      const timer = setTimeout(() => {
        if (byToken.get(token)?.opened === false && drop(token)) options.onExpire(token);
      }, options.openWithinMs);
      timer.unref();
      byToken.set(token, { owner: ownerOf(actor), userId: actor.userId, opened: false, timer });
      byUser.set(actor.userId, held + 1);
      return token;
    },
    /** Whether `token` names a reservation of `actor`'s credential (open, if `open`). */
    owns(token: string, actor: Actor, state: 'open' | 'unopened'): boolean {
      const reservation = byToken.get(token);
      if (!reservation || reservation.owner !== ownerOf(actor)) return false;
      return reservation.opened === (state === 'open');
    },
    /** Marks the stream open; it is no longer dropped for waiting. */
    open(token: string): void {
      const reservation = byToken.get(token);
      if (!reservation) return;
      reservation.opened = true;
      clearTimeout(reservation.timer);
    },
    drop,
    /** Reservations `userId` holds. */
    held: (userId: string): number => byUser.get(userId) ?? 0,
  };
}

export type StreamReservations = ReturnType<typeof createStreamReservations>;

/**
 * Yoga's graphql-sse plugin (`@graphql-yoga/plugin-graphql-sse`, for this graphql-yoga
 * 5.x) at the graph's own path, handed only single-connection requests: the HTTP layer
 * checked them first (credential, reservation owner, slots) and set the token. Every
 * other request, distinct-connection streams included, goes through Yoga as before.
 * Operations run through Yoga's envelop, so every graph plugin and the error masker apply.
 */
export function useSingleConnectionSse(path: string): Plugin<Context> {
  const sse = useGraphQLSSE({ endpoint: path });
  return {
    ...sse,
    onRequest(payload) {
      const { request } = payload;
      const url = new URL(request.url);
      const single =
        request.method === 'PUT' ||
        request.method === 'DELETE' ||
        request.headers.has(STREAM_TOKEN_HEADER) ||
        url.searchParams.has(STREAM_TOKEN_QUERY);
      if (single) return sse.onRequest?.(payload);
    },
  } as Plugin<Context>;
}

/**
 * Counts each subscription run on a single-connection stream against the caller's
 * SVC_STREAMS_PER_USER, as a distinct-connection stream is: the slot is taken when the
 * subscription starts and given back when it ends (completed, stopped with DELETE, or
 * its stream closed). Over the cap the subscription answers the stream refusal and
 * completes. Listed last, so an operation another plugin refuses takes no slot.
 */
export function useSingleConnectionStreamSlots(): Plugin<Context> {
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const stream = (args.contextValue as Context).singleConnection;
      if (!stream) return;
      const release = stream.takeStreamSlot();
      if (!release) {
        setResultAndStopExecution({ data: null, errors: [stream.refusal()] });
        return;
      }
      return {
        onSubscribeResult({ result }) {
          if (!(Symbol.asyncIterator in Object(result))) {
            release();
            return;
          }
          return { onEnd: release };
        },
        onSubscribeError: release,
      };
    },
  };
}
