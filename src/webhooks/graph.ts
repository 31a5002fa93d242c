import { builder } from '../graph/builder.js';
import { costs } from '../graph/complexity.js';
import { STATEMENT } from '../graph/costs.js';
import { limited } from '../graph/input-limits.js';
import { TEXT_MAX } from '../limits.js';
import { connectionOf } from '../graph/connection.js';
import { webhookLoaders } from './loaders.js';
import { createWebhook, deleteWebhook, listWebhooks, type CreatedWebhook } from './service.js';
import type { Webhook, WebhookDelivery } from './tables.js';
import { pageSize } from '../paging/index.js';

const WebhookDeliveryObject = builder.objectRef<WebhookDelivery>('WebhookDelivery').implement({
  description: 'One event sent to one webhook (SPEC 3, Webhook delivery).',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    eventId: t.expose('eventId', { type: 'UUID', description: 'The envelope `id`.' }),
    status: t.exposeString('status', { description: 'pending, delivered or failed.' }),
    attempts: t.exposeInt('attempts'),
    lastStatus: t.exposeInt('lastStatus', { nullable: true }),
    lastError: t.exposeString('lastError', { nullable: true }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
  }),
});

export const WebhookObject = builder.objectRef<Webhook>('Webhook').implement({
  description: 'An outbound webhook subscription (SPEC 2.8). Its secret is shown only at creation.',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    url: t.exposeString('url'),
    events: t.exposeStringList('events'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    deliveries: t.field({
      type: [WebhookDeliveryObject],
      description: 'Latest deliveries first; `status` keeps one state (e.g. failed).',
      args: {
        first: t.arg.int({ required: false }),
        status: t.arg.string({
          required: false,
          extensions: limited({ maxLength: TEXT_MAX.word }),
        }),
      },
      // Every webhook of a page is read in one statement (a DataLoader); the declared cost
      // stays a statement a webhook, as docs/limits.md publishes it.
      extensions: costs({ cost: STATEMENT }),
      resolve: (webhook, args, ctx) =>
        ctx.loaders
          .of(webhookLoaders)
          .deliveries(pageSize(args.first, ctx.config), args.status ?? null)
          .load(webhook.id),
    }),
  }),
});

const WebhookConnection = connectionOf('Webhook', WebhookObject);

const CreateWebhookPayload = builder.objectRef<CreatedWebhook>('CreateWebhookPayload').implement({
  fields: (t) => ({
    webhook: t.field({ type: WebhookObject, resolve: (r) => r.webhook }),
    secret: t.exposeString('secret', {
      description:
        'A Standard Webhooks secret (whsec_ and base64 key bytes): keys the webhook-signature and X-Webhook-Signature HMACs of every delivery. Shown once: store it now.',
    }),
  }),
});

builder.queryFields((t) => ({
  webhooks: t.field({
    type: WebhookConnection,
    description:
      'Live webhooks of the workspace (holders of manage_webhooks), or those the caller created.',
    authScopes: { access: { scope: 'webhooks:read' } },
    args: {
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
    },
    resolve: (_root, args, ctx) => listWebhooks(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  createWebhook: t.field({
    type: CreateWebhookPayload,
    authScopes: { access: { scope: 'webhooks:write', capability: 'manage_webhooks' } },
    args: {
      url: t.arg.string({ required: true, extensions: limited({ maxLength: TEXT_MAX.url }) }),
      events: t.arg.stringList({
        required: true,
        extensions: limited({ maxLength: TEXT_MAX.word, maxItems: 100 }),
      }),
    },
    resolve: (_root, args, ctx) => createWebhook(ctx, args),
  }),
  deleteWebhook: t.field({
    type: 'Boolean',
    authScopes: { access: { scope: 'webhooks:write' } },
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => deleteWebhook(ctx, args.id),
  }),
}));
