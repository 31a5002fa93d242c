import { signedIn, type Context } from '../context.js';
import { builder } from '../graph/builder.js';
import { connectionOf } from '../graph/connection.js';
import { EVERY_AREA } from './access.js';
import type { ApiToken } from './tables.js';
import { createApiToken, pageApiTokens, revokeApiToken } from './tokens.js';
import { limited } from '../graph/input-limits.js';
import { TEXT_MAX } from '../limits.js';
import { decodeCursor, encodeCursor, pageSize, toPage, type Page } from '../paging/index.js';

/** The caller's own tokens, newest first, legacy ones included. */
async function listOwnApiTokens(
  ctx: Context,
  args: { first?: number | null; after?: string | null },
): Promise<Page<ApiToken>> {
  const size = pageSize(args.first, ctx.config);
  const afterId = args.after ? (decodeCursor('apiTokens', args.after, 1)[0] as string) : null;
  const rows = await pageApiTokens(ctx.database.db, signedIn(ctx).actor, { size, afterId });
  return toPage(rows, size, (token) => encodeCursor('apiTokens', [token.id]));
}

/** A token held to every area (minted without scopes, or from before scopes existed). */
function holdsEveryArea(token: ApiToken): boolean {
  return token.scopes === null || token.scopes.includes(EVERY_AREA);
}

export const ApiTokenObject = builder.objectRef<ApiToken>('ApiToken').implement({
  description: 'An API token of the signed-in account (SPEC 2.9). Its secret is never shown again.',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    name: t.exposeString('name'),
    scopes: t.stringList({
      description:
        'What the token may do, as `area:access`. A token held to every area lists every ' +
        'area the deployment declares, with write access.',
      resolve: (token, _args, ctx) =>
        holdsEveryArea(token)
          ? [...ctx.access.areas].map((area) => `${area}:write`)
          : (token.scopes ?? []),
    }),
    allAreas: t.boolean({
      description:
        'Minted without scopes: holds every area, including those plugins installed later declare.',
      resolve: holdsEveryArea,
    }),
    legacy: t.boolean({
      description: 'Predates scopes: full authority and no expiry until replaced.',
      resolve: (token) => token.scopes === null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', {
      type: 'DateTime',
      nullable: true,
      description: 'Null: never expires.',
    }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
  }),
});

const ApiTokenConnection = connectionOf('ApiToken', ApiTokenObject);

const ApiTokenCreatePayload = builder
  .objectRef<{ token: ApiToken; secret: string }>('ApiTokenCreatePayload')
  .implement({
    fields: (t) => ({
      token: t.field({ type: ApiTokenObject, resolve: (p) => p.token }),
      secret: t.exposeString('secret', {
        description: 'The bearer secret (`a1_…`). Shown this once; only its hash is kept.',
      }),
    }),
  });

// SPEC 5: token management needs a browser session; a token never manages tokens.
const sessionOnly = { access: { session: true } } as const;

builder.queryFields((t) => ({
  apiTokens: t.field({
    type: ApiTokenConnection,
    description: "The caller's own tokens, newest first, revoked and legacy ones included.",
    authScopes: sessionOnly,
    args: {
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
    },
    resolve: (_root, args, ctx) => listOwnApiTokens(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  apiTokenCreate: t.field({
    type: ApiTokenCreatePayload,
    description:
      'Mints a token acting as the caller. Without scopes it holds every area; without ' +
      'ttlDays (or with 0) it never expires.',
    authScopes: sessionOnly,
    args: {
      name: t.arg.string({ required: true, extensions: limited({ maxLength: TEXT_MAX.name }) }),
      scopes: t.arg.stringList({
        required: false,
        extensions: limited({ maxLength: TEXT_MAX.word, maxItems: 64 }),
      }),
      ttlDays: t.arg.int({ required: false }),
    },
    resolve: (_root, args, ctx) => {
      const { actor, workspaceId } = signedIn(ctx);
      return createApiToken(ctx.database.db, ctx.access, {
        workspaceId: workspaceId,
        userId: actor.userId,
        name: args.name,
        scopes: args.scopes ?? null,
        ttlDays: args.ttlDays ?? null,
      });
    },
  }),
  apiTokenRevoke: t.field({
    type: ApiTokenObject,
    description:
      "Revokes one of the caller's tokens at once; revoking it again keeps the first time.",
    authScopes: sessionOnly,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => {
      const { actor, workspaceId } = signedIn(ctx);
      return revokeApiToken(ctx.database.db, workspaceId, actor.userId, args.id);
    },
  }),
}));
