import DataLoader from 'dataloader';
import type { Contact } from '../contacts/tables.js';
import type { Context } from '../context.js';
import { workspaceOf } from '../users/service.js';
import { selectContacts, selectOpenTasksOfContacts } from './queries.js';
import type { Task } from './tables.js';

interface TaskLoaders {
  contacts: DataLoader<string, Contact | null>;
  /** One loader per page size asked of `Contact.tasks`. */
  openTasksByContact: Map<number, DataLoader<string, Task[]>>;
}

// Per request: the context lives as long as one operation, so the loaders do too.
const byContext = new WeakMap<Context, TaskLoaders>();

function loadersOf(ctx: Context): TaskLoaders {
  let loaders = byContext.get(ctx);
  if (!loaders) {
    loaders = {
      contacts: new DataLoader(async (ids) => {
        const rows = await selectContacts(ctx.database.db, workspaceOf(ctx), ids);
        const byId = new Map(rows.map((row) => [row.id, row]));
        return ids.map((id) => byId.get(id) ?? null);
      }),
      openTasksByContact: new Map(),
    };
    byContext.set(ctx, loaders);
  }
  return loaders;
}

/** A task's contact; every task of a page is resolved in one read. */
export function loadContact(ctx: Context, id: string): Promise<Contact | null> {
  return loadersOf(ctx).contacts.load(id);
}

/** A contact's first `first` open tasks; every contact of a page is resolved in one read. */
export function loadOpenTasksOfContact(ctx: Context, contactId: string, first: number) {
  const loaders = loadersOf(ctx).openTasksByContact;
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
