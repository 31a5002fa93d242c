import DataLoader from 'dataloader';
import type { Db } from '../db/client.js';
import { groupByKey } from '../loaders.js';
import { selectContacts, selectIdentitiesOf, type IdentityView } from './queries.js';
import type { Contact } from './tables.js';

export interface ContactLoaders {
  /** A contact's identities; every contact of a page in one read. */
  identities: DataLoader<string, IdentityView[]>;
  /** Contacts by id, for parents that carry only `id` (plugins' contacts). */
  contacts: DataLoader<string, Contact | undefined>;
}

/** The identities loader over one batch read (`load` receives every id of a tick). */
export function identitiesLoader(
  load: (contactIds: readonly string[]) => Promise<(IdentityView & { contactId: string })[]>,
): DataLoader<string, IdentityView[]> {
  return new DataLoader(async (ids) =>
    groupByKey(ids, await load(ids), (identity) => identity.contactId),
  );
}

/** A request's contact loaders: `ctx.loaders.of(contactLoaders)`. */
export function contactLoaders(db: Db, workspaceId: string): ContactLoaders {
  return {
    identities: identitiesLoader((ids) => selectIdentitiesOf(db, workspaceId, ids)),
    contacts: new DataLoader(async (ids) => {
      const rows = await selectContacts(db, workspaceId, ids);
      return groupByKey(ids, rows, (contact) => contact.id).map(([contact]) => contact);
    }),
  };
}
