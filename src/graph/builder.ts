import SchemaBuilder from '@pothos/core';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';

/** An uploaded part: Yoga's File (a ponyfill on Node, so not `instanceof File`). */
export type UploadedFile = Pick<File, 'name' | 'type' | 'size' | 'arrayBuffer' | 'stream' | 'text'>;

export type Scalars = {
  UUID: { Input: string; Output: string };
  DateTime: { Input: Date; Output: Date | string };
  Date: { Input: string; Output: string };
  Upload: { Input: UploadedFile; Output: never };
};

export interface AuthScopes {
  /** Any signed-in caller. */
  authenticated: boolean;
}

/**
 * The one schema builder. Scope-auth runs first so a refusal stays a top-level error in
 * SPEC 7.1's shape rather than becoming a union member.
 */
export const builder = new SchemaBuilder<{
  Context: Context;
  Scalars: Scalars;
  AuthScopes: AuthScopes;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: true;
}>({
  plugins: [ScopeAuthPlugin, RelayPlugin],
  defaultFieldNullability: false,
  defaultInputFieldRequiredness: true,
  scopeAuth: {
    authScopes: (ctx) => ({ authenticated: ctx.actor !== null }),
    unauthorizedError: () => refuse('authentication_required'),
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
});

builder.queryType({});
