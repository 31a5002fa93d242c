import { builder } from '../graph/builder.js';
import { costs } from '../graph/complexity.js';
import { serviceVersion } from './version.js';

interface AdminSettings {
  toastMilliseconds: number;
  listPageSizes: number[];
  listPageSize: number;
  contactPageCap: number;
  formatLocale: string;
}

export const AdminSettingsObject = builder.objectRef<AdminSettings>('AdminSettings').implement({
  description: 'Display settings the operator chose for every list and toast (SPEC 2.6).',
  fields: (t) => ({
    toastMilliseconds: t.exposeInt('toastMilliseconds', {
      description: 'How long a confirmation toast stays (SVC_TOAST_DURATION).',
    }),
    listPageSizes: t.exposeIntList('listPageSizes', {
      description: 'Page sizes a list offers (SVC_LIST_PAGE_SIZES).',
    }),
    listPageSize: t.exposeInt('listPageSize', {
      description: 'Page size a list opens on (SVC_LIST_PAGE_SIZE).',
    }),
    contactPageCap: t.exposeInt('contactPageCap', {
      description: 'Most contacts one contactPage answers (SVC_GRAPH_PAGE_CAP).',
    }),
    formatLocale: t.exposeString('formatLocale', {
      description: 'Locale for dates, times, numbers and money (SVC_FORMAT_LOCALE).',
    }),
  }),
});

builder.queryFields((t) => ({
  version: t.string({
    description: 'The service version (semantic versioning).',
    authScopes: { access: { scope: 'meta:read' } },
    extensions: costs({ cost: 0 }),
    resolve: () => serviceVersion,
  }),
  adminSettings: t.field({
    type: AdminSettingsObject,
    description: 'Display settings for lists, toasts and formatting.',
    authScopes: { access: { scope: 'meta:read' } },
    extensions: costs({ cost: 0 }),
    resolve: (_root, _args, { config }) => ({
      toastMilliseconds: config.graph.toastMs,
      listPageSizes: config.graph.listPageSizes,
      listPageSize: config.graph.listPageSize,
      contactPageCap: config.graph.pageCap,
      formatLocale: config.graph.formatLocale,
    }),
  }),
}));
