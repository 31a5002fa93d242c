import DataLoader from 'dataloader';
import type { Db } from '../db/client.js';
import { groupByKey, loaderFamily } from '../loaders.js';
import { selectOpenTasksOfContacts, selectTasks } from './queries.js';
import type { Task } from './tables.js';

export interface TaskLoaders {
  /** A contact's first `first` open tasks; every contact of a page in one read. */
  openTasksOfContact(first: number): DataLoader<string, Task[]>;
  /** Tasks by id, for a task read without some of its columns (`stored` in graph.ts). */
  tasks: DataLoader<string, Task | undefined>;
}

/** A request's task loaders: `ctx.loaders.of(taskLoaders)`. */
export function taskLoaders(db: Db, workspaceId: string): TaskLoaders {
  return {
    openTasksOfContact: loaderFamily(
      (contactIds, first: number) => selectOpenTasksOfContacts(db, workspaceId, contactIds, first),
      (task) => task.contactId ?? '',
    ),
    tasks: new DataLoader(async (ids) => {
      const rows = await selectTasks(db, workspaceId, ids);
      return groupByKey(ids, rows, (task) => task.id).map(([task]) => task);
    }),
  };
}
