import DataLoader from 'dataloader';
import type { Context } from '../context.js';
import type { Db } from '../db/client.js';
import { workspaceOf } from '../users/service.js';
import { selectContacts, selectIdentitiesOf } from './queries.js';
import type { Contact, ContactIdentity } from './tables.js';

export interface ContactLoaders {
  /** A contact's identities; every contact of a page in one read. */
  identities: DataLoader<string, ContactIdentity[]>;
  /** Contacts by id, for parents that carry only `id` (plugins' contacts). */
  contacts: DataLoader<string, Contact | undefined>;
}

/** Groups rows under the keys asked, in key order (DataLoader's contract). */
export function groupByKey<K, T>(keys: readonly K[], rows: readonly T[], keyOf: (row: T) => K) {
  const groups = new Map<K, T[]>(keys.map((key) => [key, []]));
  for (const row of rows) groups.get(keyOf(row))?.push(row);
  return keys.map((key) => groups.get(key) ?? []);
}

/** The identities loader over one batch read (`load` receives every id of a tick). */
export function identitiesLoader(
  load: (contactIds: readonly string[]) => Promise<ContactIdentity[]>,
): DataLoader<string, ContactIdentity[]> {
  return new DataLoader(async (ids) =>
    groupByKey(ids, await load(ids), (identity) => identity.contactId),
  );
}

export function createContactLoaders(db: Db, workspaceId: string): ContactLoaders {
  return {
    identities: identitiesLoader((ids) => selectIdentitiesOf(db, workspaceId, ids)),
    contacts: new DataLoader(async (ids) => {
      const rows = await selectContacts(db, workspaceId, ids);
      return groupByKey(ids, rows, (contact) => contact.id).map(([contact]) => contact);
    }),
  };
}

// The request's Context is built by the HTTP layer; loaders hang off it lazily, so they
// live exactly as long as the request.
const perRequest = new WeakMap<Context, ContactLoaders>();

export function contactLoaders(ctx: Context): ContactLoaders {
  let loaders = perRequest.get(ctx);
  if (!loaders) {
    loaders = createContactLoaders(ctx.database.db, workspaceOf(ctx));
    perRequest.set(ctx, loaders);
  }
  return loaders;
}
