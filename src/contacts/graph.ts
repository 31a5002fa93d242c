import { builder } from '../graph/builder.js';
import type { Contact } from './tables.js';

/**
 * A contact (SPEC 2.3). Plugins and other domains add fields to it (tasks, notes,
 * custom fields); a plugin returning a contact gives `id` and `name` only, and the core
 * resolves the rest from the id.
 */
export const ContactObject = builder.objectRef<Contact>('Contact');

ContactObject.implement({
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    name: t.exposeString('name'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});
