import DataLoader from 'dataloader';
import type { Db } from './db/client.js';
import { refuse } from './errors.js';

/**
 * Makes a domain's loaders for one request: its database view and the caller's
 * workspace, which every batched read is scoped to.
 */
export type LoaderFactory<T> = (db: Db, workspaceId: string) => T;

/**
 * The request's loaders (`ctx.loaders`). Each factory runs once per request, on first use,
 * so a page's rows batch into one read and nothing cached outlives the request.
 */
export class RequestLoaders {
  /** Made with the first loaders: most reads answer from their own statement and need none. */
  #made: Map<LoaderFactory<unknown>, unknown> | undefined;

  /** `db` is the request's database view, or the function that makes it on first use. */
  constructor(
    private readonly db: Db | (() => Db),
    private readonly workspaceId: string | null,
  ) {}

  /** This request's instance of `factory`'s loaders; only a signed-in caller has them. */
  of<T>(factory: LoaderFactory<T>): T {
    const made = (this.#made ??= new Map());
    if (made.has(factory)) return made.get(factory) as T;
    if (this.workspaceId === null) throw refuse('authentication_required');
    const loaders = factory(typeof this.db === 'function' ? this.db() : this.db, this.workspaceId);
    made.set(factory, loaders);
    return loaders;
  }
}

/** Groups rows under the keys asked, in key order (DataLoader's contract). */
export function groupByKey<K, T>(keys: readonly K[], rows: readonly T[], keyOf: (row: T) => K) {
  const groups = new Map<K, T[]>(keys.map((key) => [key, []]));
  for (const row of rows) groups.get(keyOf(row))?.push(row);
  return keys.map((key) => groups.get(key) ?? []);
}

/**
 * Loaders of one row kind that differ by the field's arguments (a page size, a status):
 * one DataLoader per distinct argument list, each reading every key of a tick in one
 * batch. `read` answers the rows of all `keys`; `keyOf` says which key a row belongs to.
 */
export function loaderFamily<A extends unknown[], T>(
  read: (keys: readonly string[], ...args: A) => Promise<readonly T[]>,
  keyOf: (row: T) => string,
): (...args: A) => DataLoader<string, T[]> {
  const byArgs = new Map<string, DataLoader<string, T[]>>();
  return (...args) => {
    const id = JSON.stringify(args);
    let loader = byArgs.get(id);
    if (!loader) {
      loader = new DataLoader(async (keys) => groupByKey(keys, await read(keys, ...args), keyOf));
      byArgs.set(id, loader);
    }
    return loader;
  };
}
