import { and, eq } from 'drizzle-orm';
import type { Context } from '../context.js';
import { refuse } from '../errors.js';
import { findUser } from '../users/service.js';
import { users } from '../users/tables.js';
import { matchLocale } from './negotiate.js';

/** The default locale (SPEC 5: `en-US` when nothing else decides). */
export const DEFAULT_LOCALE = 'en-US';

/** The locales the interface is written in, default first (SPEC 4.2 `supportedLocales`). */
export const SUPPORTED_LOCALES: readonly string[] = Object.freeze([
  DEFAULT_LOCALE,
  'es-ES',
  'de-DE',
  'fr-FR',
]);

/** The supported spelling of `tag` (tags compare regardless of letter case), or undefined. */
export function findSupportedLocale(tag: string | null | undefined): string | undefined {
  if (!tag) return undefined;
  return SUPPORTED_LOCALES.find((locale) => locale.toLowerCase() === tag.toLowerCase());
}

/**
 * SPEC 5 "Locale resolution": the signed-in account's stored choice, then the closest match
 * to Accept-Language, then `en-US`. A stored choice the deployment no longer serves is
 * passed over, as if none were stored.
 */
export async function resolveLocale(ctx: Context): Promise<string> {
  if (ctx.actor) {
    const user = await findUser(ctx.database.db, ctx.actor.workspaceId, ctx.actor.userId);
    const stored = findSupportedLocale(user?.locale);
    if (stored) return stored;
  }
  return matchLocale(ctx.headers.get('accept-language'), SUPPORTED_LOCALES) ?? DEFAULT_LOCALE;
}

/**
 * Stores the caller's choice and answers it as the list spells it. A locale not in the
 * list is refused with `locale_unknown` and changes nothing.
 */
export async function setLocale(ctx: Context, locale: string): Promise<string> {
  const { actor } = ctx;
  if (!actor) throw refuse('authentication_required');
  const chosen = findSupportedLocale(locale);
  if (!chosen) throw refuse('locale_unknown', { supported: [...SUPPORTED_LOCALES] });
  const updated = await ctx.database.db
    .update(users)
    .set({ locale: chosen })
    .where(and(eq(users.workspaceId, actor.workspaceId), eq(users.id, actor.userId)))
    .returning({ id: users.id });
  if (updated.length === 0) throw refuse('user_not_found');
  return chosen;
}
