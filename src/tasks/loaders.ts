import DataLoader from 'dataloader';
import type { Context } from '../context.js';
import { workspaceOf } from '../users/service.js';
import { selectOpenTasksOfContacts } from './queries.js';
import type { Task } from './tables.js';

/** One loader per page size asked of `Contact.tasks`. */
type OpenTaskLoaders = Map<number, DataLoader<string, Task[]>>;

// Per request: the context lives as long as one operation, so the loaders do too.
const byContext = new WeakMap<Context, OpenTaskLoaders>();

function loadersOf(ctx: Context): OpenTaskLoaders {
  let loaders = byContext.get(ctx);
  if (!loaders) {
    loaders = new Map();
    byContext.set(ctx, loaders);
  }
  return loaders;
}

/** A contact's first `first` open tasks; every contact of a page is resolved in one read. */
export function loadOpenTasksOfContact(ctx: Context, contactId: string, first: number) {
  const loaders = loadersOf(ctx);
  let loader = loaders.get(first);
  if (!loader) {
    loader = new DataLoader(async (ids) => {
      const rows = await selectOpenTasksOfContacts(ctx.database.db, workspaceOf(ctx), ids, first);
      const byContact = new Map<string, Task[]>(ids.map((id) => [id, []]));
      for (const row of rows) if (row.contactId) byContact.get(row.contactId)?.push(row);
      return ids.map((id) => byContact.get(id) ?? []);
    });
    loaders.set(first, loader);
  }
  return loader.load(contactId);
}
