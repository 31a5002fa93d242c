import DataLoader from 'dataloader';
import type { Context } from '../context.js';
import type { Db } from '../db/client.js';
import { workspaceOf } from '../users/service.js';
import { selectRecentDeliveries } from './queries.js';
import type { WebhookDelivery } from './tables.js';

export interface WebhookLoaders {
  /**
   * A webhook's latest `first` deliveries of `status` (null: any), newest first; every
   * webhook of a page in one read. One loader per (first, status) asked.
   */
  deliveries(first: number, status: string | null): DataLoader<string, WebhookDelivery[]>;
}

export function createWebhookLoaders(db: Db, workspaceId: string): WebhookLoaders {
  const byArgs = new Map<string, DataLoader<string, WebhookDelivery[]>>();
  return {
    deliveries(first, status) {
      const key = JSON.stringify([first, status]);
      let loader = byArgs.get(key);
      if (!loader) {
        loader = new DataLoader(async (ids) => {
          const rows = await selectRecentDeliveries(db, workspaceId, ids, first, status);
          const byWebhook = new Map<string, WebhookDelivery[]>(ids.map((id) => [id, []]));
          for (const row of rows) byWebhook.get(row.webhookId)?.push(row);
          return ids.map((id) => byWebhook.get(id) ?? []);
        });
        byArgs.set(key, loader);
      }
      return loader;
    },
  };
}

// Per request: the context lives as long as one operation, so the loaders do too.
const perRequest = new WeakMap<Context, WebhookLoaders>();

export function webhookLoaders(ctx: Context): WebhookLoaders {
  let loaders = perRequest.get(ctx);
  if (!loaders) {
    loaders = createWebhookLoaders(ctx.database.db, workspaceOf(ctx));
    perRequest.set(ctx, loaders);
  }
  return loaders;
}
