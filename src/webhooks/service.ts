import { and, asc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import { signedIn, type Context } from '../context.js';
import { refuse } from '../errors.js';
import type { LoadedPlugin } from '../plugin-host/host.js';
import { judgeRegistration, parseWebhookUrl } from './address.js';
import { createSecret } from './signing.js';
import { webhookDeliveries, webhooks, type Webhook } from './tables.js';
import { decodeCursor, encodeCursor, pageSize, toPage, type Page } from '../paging/index.js';

/** Core event names (docs/events.md) and the chat plugin's (SPEC 6). */
export const CORE_EVENT_NAMES = [
  'contact.created',
  'contact.renamed',
  'contact.identity_added',
  'contact.identity_removed',
  'contact.deleted',
  'contact.merged',
  'task.created',
  'task.updated',
  'task.completed',
  'task.deleted',
  'chat.message.received',
] as const;

/**
 * The deployment's event catalogue: the core's names plus every loaded plugin's declared
 * `events`. Filled by startService (one catalogue per process, like the schema).
 */
let catalogue: ReadonlySet<string> = new Set(CORE_EVENT_NAMES);

export function setEventCatalogue(plugins: readonly LoadedPlugin[]): void {
  const names = new Set<string>(CORE_EVENT_NAMES);
  for (const { definition } of plugins)
    for (const name of definition?.events ?? []) names.add(name);
  catalogue = names;
}

export function eventCatalogue(): ReadonlySet<string> {
  return catalogue;
}

export interface CreatedWebhook {
  webhook: Webhook;
  /** Shown once. */
  secret: string;
}

/** Without manage_webhooks an account reaches only the webhooks it created. */
function reach(ctx: Context): SQL | undefined {
  const { actor } = signedIn(ctx);
  return actor.capabilities.has('manage_webhooks')
    ? undefined
    : eq(webhooks.createdBy, actor.userId);
}

export async function createWebhook(
  ctx: Context,
  input: { url: string; events: readonly string[] },
): Promise<CreatedWebhook> {
  const { actor, workspaceId } = signedIn(ctx);
  const url = parseWebhookUrl(input.url);
  if (!url) throw refuse('webhook_url_invalid');
  const events = [...new Set(input.events.map((name) => name.trim()))].filter((n) => n !== '');
  if (events.length === 0) throw refuse('webhook_events_required');
  const unknown = events.find((name) => !catalogue.has(name));
  if (unknown !== undefined) throw refuse('event_unknown', { event: unknown });
  // Last, as it may wait on the resolver.
  await checkUrl(ctx, url);
  const secret = createSecret();
  const [webhook] = await ctx.database.db
    .insert(webhooks)
    .values({
      workspaceId: workspaceId,
      url: url.toString(),
      events,
      secret,
      createdBy: actor.userId,
    })
    .returning();
  return { webhook: webhook!, secret };
}

/**
 * Refuses a URL that delivery would refuse now (SPEC 8.2): an internal literal, or a name
 * resolving to a refused address, named with the variable that could open it; and a name
 * that does not exist. A lookup that fails otherwise accepts the URL: delivery judges it
 * again, as it does every URL (DNS answers change). Any future change of a webhook's URL
 * goes through here too.
 */
async function checkUrl(ctx: Context, url: URL): Promise<void> {
  const judged = await judgeRegistration(url, ctx.config.webhooks);
  switch (judged.kind) {
    case 'refused':
      throw refuse('webhook_url_internal', {
        host: judged.host,
        address: judged.address,
        allowable: judged.allowable,
      });
    case 'unknown_host':
      throw refuse('webhook_host_unknown', { host: judged.host });
    case 'unchecked':
      ctx.log.warn(
        { host: judged.host, error: judged.error },
        'webhook host lookup failed at registration; accepted, judged at each delivery',
      );
      return;
    case 'accepted':
      return;
  }
}

export async function listWebhooks(
  ctx: Context,
  args: { first?: number | null; after?: string | null },
): Promise<Page<Webhook>> {
  const { workspaceId } = signedIn(ctx);
  const size = pageSize(args.first, ctx.config);
  // Keyed by id alone: a timestamp cursor would lose PostgreSQL's microseconds.
  const after = args.after ? String(decodeCursor('webhooks', args.after, 1)[0]) : null;
  const rows = await ctx.database.db
    .select()
    .from(webhooks)
    .where(
      and(
        eq(webhooks.workspaceId, workspaceId),
        isNull(webhooks.deletedAt),
        reach(ctx),
        after ? sql`${webhooks.id} > ${after}::uuid` : undefined,
      ),
    )
    .orderBy(asc(webhooks.id))
    .limit(size + 1);
  return toPage(rows, size, (row) => encodeCursor('webhooks', [row.id]));
}

export async function deleteWebhook(ctx: Context, id: string): Promise<boolean> {
  const { workspaceId } = signedIn(ctx);
  return ctx.database.db.transaction(async (tx) => {
    const deleted = await tx
      .update(webhooks)
      .set({ deletedAt: sql`now()` })
      .where(
        and(
          eq(webhooks.workspaceId, workspaceId),
          eq(webhooks.id, id),
          isNull(webhooks.deletedAt),
          reach(ctx),
        ),
      )
      .returning({ id: webhooks.id });
    if (deleted.length === 0) throw refuse('webhook_not_found');
    // Pending deliveries of a revoked subscription are never sent.
    await tx
      .update(webhookDeliveries)
      .set({ status: 'failed', lastError: 'webhook deleted' })
      .where(
        and(
          eq(webhookDeliveries.workspaceId, workspaceId),
          eq(webhookDeliveries.webhookId, id),
          eq(webhookDeliveries.status, 'pending'),
        ),
      );
    return true;
  });
}
