import { expect } from '@jest/globals';
import type { Db } from '../../src/db/client.js';
import { AppError } from '../../src/errors.js';
import { bearer, createUser, createWorkspace, tokenFor } from './factories.js';
import type { GraphBody, TestService } from './service.js';

export const CONTACT_FIELDS = `id name createdAt updatedAt
  identities { id channel identifier displayName createdAt }`;

export const CREATE_CONTACT = `mutation ($input: CreateContactInput!) {
  createContact(input: $input) { ${CONTACT_FIELDS} }
}`;
export const RENAME_CONTACT = `mutation ($id: UUID!, $name: String!) {
  renameContact(id: $id, name: $name) { ${CONTACT_FIELDS} }
}`;
export const ADD_IDENTITY = `mutation ($contactId: UUID!, $identity: IdentityInput!) {
  addContactIdentity(contactId: $contactId, identity: $identity) {
    identity { id channel identifier displayName } contact { ${CONTACT_FIELDS} }
  }
}`;
export const DELETE_IDENTITY = `mutation ($id: UUID!) {
  deleteContactIdentity(id: $id) { identity { id channel identifier } contact { ${CONTACT_FIELDS} } }
}`;
export const CONTACT = `query ($id: UUID!) { contact(id: $id) { ${CONTACT_FIELDS} } }`;
export const CONTACTS = `query ($q: String, $first: Int, $after: String) {
  contacts(q: $q, first: $first, after: $after) {
    edges { cursor node { id name } } pageInfo { hasNextPage endCursor }
  }
}`;
export const CONTACT_PAGE = `query ($q: String, $channels: [String!], $orderBy: ContactOrder,
    $order: SortOrder, $limit: Int, $offset: Int) {
  contactPage(q: $q, channels: $channels, orderBy: $orderBy, order: $order, limit: $limit,
      offset: $offset) {
    items { id name identities { channel identifier } } total limit
  }
}`;

export interface IdentityData {
  id: string;
  channel: string;
  identifier: string;
  displayName: string | null;
  createdAt: string;
}

export interface ContactData {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  identities: IdentityData[];
}

export interface IdentityInputData {
  channel: string;
  identifier: string;
  displayName?: string | null;
}

/** The data of an answer that must have succeeded. */
export function dataOf<T>(body: GraphBody, field: string): T {
  expect(body.errors).toBeUndefined();
  return (body.data as Record<string, T>)[field] as T;
}

/** Creates a contact through the graph as `headers` (the admin by default). */
export async function createContactVia(
  svc: TestService,
  name: string,
  identities: IdentityInputData[] = [],
  headers?: Record<string, string>,
): Promise<ContactData> {
  const { body } = await svc.graph(CREATE_CONTACT, { input: { name, identities } }, headers);
  return dataOf<ContactData>(body, 'createContact');
}

/** Headers of an admin of a fresh workspace, so counts and pages start from nothing. */
export async function freshWorkspaceHeaders(
  svc: TestService,
  scopes: string[] | null = null,
): Promise<{ workspaceId: string; headers: { authorization: string } }> {
  const db = svc.db.database.db;
  const workspace = await createWorkspace(db);
  const admin = await createUser(db, workspace, { role: 'admin' });
  return { workspaceId: workspace.id, headers: bearer(await tokenFor(db, admin, { scopes })) };
}

/** Asserts a single refusal with its code, reason and (when given) meta. */
export function expectReason(
  body: GraphBody,
  code: string,
  reason: string,
  meta: Record<string, unknown> = {},
): void {
  expect(body.data ?? null).toBeNull();
  expect(body.errors).toHaveLength(1);
  expect(body.errors?.[0]?.extensions).toEqual(expect.objectContaining({ code, reason, meta }));
}

/** The refusal `write` throws inside a transaction of `db`, which is rolled back. */
export async function refusalIn(db: Db, write: (tx: Db) => Promise<unknown>): Promise<AppError> {
  try {
    await db.transaction(write);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('the write was not refused');
}
