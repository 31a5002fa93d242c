import { builder } from '../graph/builder.js';
import { costs } from '../graph/complexity.js';
import { limited } from '../graph/input-limits.js';
import { TEXT_MAX } from '../limits.js';
import { SUPPORTED_LOCALES, resolveLocale, setLocale } from './service.js';

builder.queryFields((t) => ({
  locale: t.string({
    description:
      "The interface locale: the signed-in account's stored choice, else the closest match to " +
      'Accept-Language, else en-US. Open to anonymous callers.',
    skipTypeScopes: true,
    resolve: (_root, _args, ctx) => resolveLocale(ctx),
  }),
  supportedLocales: t.stringList({
    description: 'The locales the interface is written in, default first.',
    authScopes: { access: { scope: 'meta:read' } },
    extensions: costs({ cost: 0 }),
    resolve: () => [...SUPPORTED_LOCALES],
  }),
}));

builder.mutationFields((t) => ({
  setLocale: t.string({
    description:
      "Stores the caller's locale and answers it as supportedLocales spells it. A locale not " +
      'in that list is refused with locale_unknown (meta.supported).',
    authScopes: { access: { scope: 'users:write' } },
    args: {
      locale: t.arg.string({ required: true, extensions: limited({ maxLength: TEXT_MAX.word }) }),
    },
    resolve: (_root, args, ctx) => setLocale(ctx, args.locale),
  }),
}));
