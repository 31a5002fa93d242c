import { buildCatalogue } from '../../src/auth/access.js';
import { resolveCredential } from '../../src/auth/credentials.js';
import type { Actor } from '../../src/context.js';
import type { Db } from '../../src/db/client.js';
import type { User } from '../../src/users/tables.js';
import { bearer, sessionCookieFor, tokenFor } from '../support/factories.js';

const catalogue = buildCatalogue([]);

async function resolve(db: Db, headers: { authorization?: string; cookie?: string }) {
  const credential = await resolveCredential(db, catalogue, headers);
  if (!('actor' in credential) || !credential.actor) throw new Error('credential did not resolve');
  return credential.actor;
}

/** The actor a request bearing a new token of `user` resolves to, and the token. */
export async function tokenActor(db: Db, user: User): Promise<{ actor: Actor; token: string }> {
  const token = await tokenFor(db, user);
  return { actor: await resolve(db, bearer(token)), token };
}

/** The actor a request bearing a new session cookie of `user` resolves to. */
export async function sessionActor(db: Db, user: User): Promise<Actor> {
  return resolve(db, { cookie: await sessionCookieFor(db, user) });
}

/** An actor built by hand, for rules tested without a database. */
export function actorOf(fields: Partial<Actor> & Pick<Actor, 'workspaceId' | 'userId'>): Actor {
  return {
    role: 'member',
    capabilities: new Set(),
    token: null,
    sessionId: null,
    ...fields,
  };
}
