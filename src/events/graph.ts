import { scopesAllow, type AccessCatalogue } from '../auth/access.js';
import { signedIn, type Actor, type Context } from '../context.js';
import { refuse, type AppError } from '../errors.js';
import { builder } from '../graph/builder.js';
import { streamRequested } from '../http/guards/stream-accept.js';
import type { BusNotice } from './bus.js';

/**
 * The scope area an event belongs to, from its name's first segment: `contact.*` is
 * `contacts`, `task.*` is `tasks`; a plugin's `chat.*` is `chat` (an area named like the
 * segment, or like it with an `s`). Null when no declared area matches.
 */
export function eventArea(name: string, catalogue: AccessCatalogue): string | null {
  const [segment = ''] = name.split('.');
  if (catalogue.areas.has(segment)) return segment;
  if (catalogue.areas.has(`${segment}s`)) return `${segment}s`;
  return null;
}

/**
 * Whether `actor` may see the event (docs/events.md): same workspace; an audience of
 * everyone or the actor itself (task events reach only their assignee); and, for a token,
 * read access to the event's area. A session is never narrowed by scopes; an event of no
 * declared area reaches only sessions and tokens holding every area.
 */
export function mayReceive(actor: Actor, catalogue: AccessCatalogue, notice: BusNotice): boolean {
  if (notice.workspaceId !== actor.workspaceId) return false;
  if (notice.audienceUserId !== null && notice.audienceUserId !== actor.userId) return false;
  if (!actor.token) return true;
  const area = eventArea(notice.name, catalogue);
  if (area === null) return scopesAllow(actor.token.scopes, '*:read');
  return scopesAllow(actor.token.scopes, `${area}:read`);
}

/**
 * A subscription asked without `Accept: text/event-stream` (or with a JSON type beside
 * it) answers this in JSON instead of streaming (SPEC 4.1); it never took a stream slot.
 * Not in SPEC 7.3 (docs/decisions.md).
 */
export function streamRequired(): AppError {
  return refuse('stream_required');
}

/**
 * The caller's stream of event notices `accept` keeps (within what `mayReceive` lets it
 * see): refused with stream_required unless asked as a stream, ended with the request,
 * the stream lifetime or the credential. Core and plugin subscriptions open theirs here.
 */
export function subscribeEvents(ctx: Context, accept: (notice: BusNotice) => boolean) {
  const { actor } = signedIn(ctx); // the field's scope check ran first
  // An operation on a single-connection stream streams whatever its own Accept says.
  if (!ctx.singleConnection && !streamRequested(ctx.headers.get('accept'))) {
    throw streamRequired();
  }
  return ctx.events.subscribe({
    actor,
    accept: (notice) => mayReceive(actor, ctx.access, notice) && accept(notice),
    signal: ctx.signal,
    lifetimeMs: ctx.config.graph.streamLifetimeMs,
  });
}

export const CoreEventObject = builder.objectRef<BusNotice>('CoreEvent').implement({
  description:
    'A change the caller may see, named so a client refetches what it shows (docs/events.md).',
  fields: (t) => ({
    id: t.expose('id', {
      type: 'UUID',
      description: 'The event id; the same id a webhook delivery of it carries.',
    }),
    name: t.exposeString('name', {
      description: 'The event name, e.g. `contact.created`, `task.updated`.',
    }),
    subjectId: t.expose('subjectId', {
      type: 'UUID',
      nullable: true,
      description: 'The record the event is about (a contact, a task), when there is one.',
    }),
    at: t.expose('at', { type: 'DateTime', description: 'When the change was recorded.' }),
  }),
});

builder.subscriptionFields((t) => ({
  coreEvent: t.field({
    type: CoreEventObject,
    description:
      'Streams the events of the caller’s workspace it may see (task events reach only their ' +
      'assignee; a token sees the areas its scopes read). Closes after SVC_STREAM_LIFETIME; ' +
      'clients reconnect and refetch. No replay of events missed while disconnected.',
    // Every notice the caller may see (subscribeEvents holds them to mayReceive).
    subscribe: (_root, _args, ctx) => subscribeEvents(ctx, () => true),
    resolve: (notice) => notice,
  }),
}));
