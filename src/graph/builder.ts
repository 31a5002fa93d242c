import SchemaBuilder from '@pothos/core';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import { checkAccess, type AccessRule } from '../auth/access.js';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';

/** An uploaded part: Yoga's File (a ponyfill on Node, so not `instanceof File`). */
export type UploadedFile = Pick<File, 'name' | 'type' | 'size' | 'arrayBuffer' | 'stream' | 'text'>;

export type Scalars = {
  UUID: { Input: string; Output: string };
  DateTime: { Input: Date; Output: Date | string };
  Date: { Input: string; Output: string };
  Upload: { Input: UploadedFile; Output: never };
  JSON: { Input: unknown; Output: unknown };
};

export interface AuthScopes {
  /** Any signed-in caller: every root field demands it unless it skips type scopes. */
  authenticated: boolean;
  /** A root field's scope, capability or session rule (src/auth/access.ts). */
  access: AccessRule;
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
  plugins: [ScopeAuthPlugin],
  defaultFieldNullability: false,
  defaultInputFieldRequiredness: true,
  scopeAuth: {
    authScopes: (ctx) => ({
      authenticated: ctx.actor !== null,
      // Throws the precise refusal (scope first, then capability) instead of a boolean.
      access: (rule: AccessRule) => {
        checkAccess(ctx.actor, rule);
        return true;
      },
    }),
    unauthorizedError: () => refuse('authentication_required'),
    // Subscriptions are checked once, when the stream opens, not on every event.
    authorizeOnSubscribe: true,
  },
});

// SPEC 5: every operation needs a credential; `login` and `locale` skip type scopes.
builder.queryType({ authScopes: { authenticated: true } });
builder.mutationType({ authScopes: { authenticated: true } });
builder.subscriptionType({ authScopes: { authenticated: true } });

/** The builder's schema types, for helpers that take refs. */
export type BuilderTypes =
  typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
