import type DataLoader from 'dataloader';
import type { Db } from '../db/client.js';
import { loaderFamily } from '../loaders.js';
import { selectRecentDeliveries } from './queries.js';
import type { WebhookDelivery } from './tables.js';

export interface WebhookLoaders {
  /**
   * A webhook's latest `first` deliveries of `status` (null: any), newest first; every
   * webhook of a page in one read. One loader per (first, status) asked.
   */
  deliveries(first: number, status: string | null): DataLoader<string, WebhookDelivery[]>;
}

/** A request's webhook loaders: `ctx.loaders.of(webhookLoaders)`. */
export function webhookLoaders(db: Db, workspaceId: string): WebhookLoaders {
  return {
    deliveries: loaderFamily(
      (ids, first: number, status: string | null) =>
        selectRecentDeliveries(db, workspaceId, ids, first, status),
      (delivery) => delivery.webhookId,
    ),
  };
}
