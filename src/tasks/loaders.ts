import type DataLoader from 'dataloader';
import type { Db } from '../db/client.js';
import { loaderFamily } from '../loaders.js';
import { selectOpenTasksOfContacts } from './queries.js';
import type { Task } from './tables.js';

export interface TaskLoaders {
  /** A contact's first `first` open tasks; every contact of a page in one read. */
  openTasksOfContact(first: number): DataLoader<string, Task[]>;
}

/** A request's task loaders: `ctx.loaders.of(taskLoaders)`. */
export function taskLoaders(db: Db, workspaceId: string): TaskLoaders {
  return {
    openTasksOfContact: loaderFamily(
      (contactIds, first: number) => selectOpenTasksOfContacts(db, workspaceId, contactIds, first),
      (task) => task.contactId ?? '',
    ),
  };
}
