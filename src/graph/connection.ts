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
      // Generic T defeats Pothos's inference of the resolver's result; the ref fixes it.
      node: t.field({ type: node, resolve: (edge) => edge.node as never }),
    }),
  });
  return builder.objectRef<Connection<T>>(`${name}Connection`).implement({
    fields: (t) => ({
      edges: t.field({ type: [Edge], resolve: (c) => c.edges }),
      pageInfo: t.field({ type: PageInfoObject, resolve: (c) => c.pageInfo }),
    }),
  });
}
