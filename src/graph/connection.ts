import type { ObjectRef } from '@pothos/core';
import type { Page, PageInfo } from '../paging/index.js';
import { builder, type BuilderTypes } from './builder.js';

/** SPEC 2.5's connection, `edges { cursor node }` and `pageInfo`: a page as the graph shows it. */
export type Connection<T> = Page<T>;

export const PageInfoObject = builder.objectRef<PageInfo>('PageInfo').implement({
  description: 'Forward paging: pass endCursor as `after` until hasNextPage is false.',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    endCursor: t.exposeString('endCursor', { nullable: true }),
  }),
});

/** `<Name>Connection` and `<Name>Edge` types for a node type. */
export function connectionOf<T>(name: string, node: ObjectRef<BuilderTypes, T>) {
  const Edge = builder.objectRef<{ cursor: string; node: T }>(`${name}Edge`).implement({
    fields: (t) => ({
      cursor: t.exposeString('cursor'),
      // Exposed, not resolved: graphql-jit reads a field without a resolver inline, where a
      // resolver costs a resolve info, a path and a call for each edge of each page.
      // Generic T defeats Pothos's check of the exposed property; the ref types it.
      node: t.expose('node' as never, { type: node as never }),
    }),
  });
  return builder.objectRef<Connection<T>>(`${name}Connection`).implement({
    fields: (t) => ({
      edges: t.expose('edges', { type: [Edge] }),
      pageInfo: t.expose('pageInfo', { type: PageInfoObject }),
    }),
  });
}
