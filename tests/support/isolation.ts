// Workspace isolation (issue 7): the shared check that another workspace's id answers
// exactly like an id that does not exist, and the list of root-field arguments the
// isolation tests cover (tests/workspaces/isolation-more.test.ts holds the guard).
import { randomUUID } from 'node:crypto';
import { expect } from '@jest/globals';
import {
  getNamedType,
  isInputObjectType,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLSchema,
} from 'graphql';
import type { GraphBody, TestService } from './service.js';

/** Replaces every occurrence of `id` in `value` with `<id>`. */
export function maskId<T>(value: T, id: string): T {
  return JSON.parse(JSON.stringify(value).split(id).join('<id>')) as T;
}

/**
 * The answer to `query` for `foreignId` and for a random unknown UUID, each with its id
 * masked, sent with `headers` (the test service's admin by default). The HTTP statuses
 * must match.
 */
export async function bothAnswers(
  svc: TestService,
  query: string,
  variables: (id: string) => Record<string, unknown>,
  foreignId: string,
  headers?: Record<string, string>,
): Promise<[GraphBody, GraphBody]> {
  const unknownId = randomUUID();
  const foreign = await svc.graph(query, variables(foreignId), headers);
  const unknown = await svc.graph(query, variables(unknownId), headers);
  expect(foreign.status).toBe(unknown.status);
  return [maskId(foreign.body, foreignId), maskId(unknown.body, unknownId)];
}

/**
 * Asserts that `query` answers another workspace's `foreignId` exactly as an unknown id:
 * a refusal with the same code, reason, meta and message. `field` names the covered
 * case as ISOLATION_CASES lists it. Answers the refusal's extensions.
 */
export async function expectAnsweredAsUnknown(
  svc: TestService,
  field: string,
  query: string,
  variables: (id: string) => Record<string, unknown>,
  foreignId: string,
  headers?: Record<string, string>,
): Promise<GraphBody> {
  expect(ISOLATION_CASES).toHaveProperty([field]);
  const [foreign, unknown] = await bothAnswers(svc, query, variables, foreignId, headers);
  // A refusal, not data: an answer that succeeded for both would prove nothing.
  expect({ field, data: foreign.data ?? null }).toEqual({ field, data: null });
  expect(foreign.errors?.[0]?.extensions.code).toEqual(expect.any(String));
  expect(foreign.errors?.[0]?.extensions.reason).toEqual(expect.any(String));
  expect({ field, answer: foreign }).toEqual({ field, answer: unknown });
  return foreign;
}

/**
 * Every UUID-typed argument of a root field, `field(arg)`, or `field(arg.inner)` for a
 * UUID field of an input object argument, and the test file covering it. The guard in
 * isolation-more.test.ts fails when the schema gains one that is not listed here, or when
 * the listed file no longer names it.
 */
export const ISOLATION_CASES: Readonly<Record<string, string>> = {
  'contact(id)': 'isolation.test.ts',
  'renameContact(id)': 'isolation.test.ts',
  'addContactIdentity(contactId)': 'isolation.test.ts',
  'deleteContactIdentity(id)': 'isolation.test.ts',
  'task(id)': 'isolation.test.ts',
  'updateTask(id)': 'isolation.test.ts',
  'updateTask(input.contactId)': 'isolation.test.ts',
  'updateTask(input.assigneeId)': 'isolation.test.ts',
  'createTask(input.contactId)': 'isolation.test.ts',
  'createTask(input.assigneeId)': 'isolation.test.ts',
  'tasks(contactId)': 'isolation.test.ts',
  'contactDuplicates(id)': '../contacts/duplicates.test.ts',
  'deleteContact(id)': '../contacts/erase.test.ts',
  'mergeContacts(targetId)': '../contacts/merge.test.ts',
  'mergeContacts(sourceIds)': '../contacts/merge.test.ts',
  'deleteTask(id)': '../tasks/delete.test.ts',
  'resendInvite(userId)': 'isolation-more.test.ts',
  'setUserDisabled(userId)': 'isolation-more.test.ts',
  'setUserRole(userId)': 'isolation-more.test.ts',
  'apiTokenRevoke(id)': 'isolation-more.test.ts',
  'deleteWebhook(id)': 'isolation-more.test.ts',
  'notes(contactId)': 'isolation-more.test.ts',
  'noteCreate(contactId)': 'isolation-more.test.ts',
  'archiveField(id)': 'isolation-fields.test.ts',
  'orderFields(ids)': 'isolation-fields.test.ts',
  'writeContactFields(contactId)': 'isolation-fields.test.ts',
  'addContactFieldEntry(contactId)': 'isolation-fields.test.ts',
  'updateContactFieldEntry(contactId)': 'isolation-fields.test.ts',
  'updateContactFieldEntry(entryId)': 'isolation-fields.test.ts',
  'deleteContactFieldEntry(contactId)': 'isolation-fields.test.ts',
  'deleteContactFieldEntry(entryId)': 'isolation-fields.test.ts',
  'importJob(id)': 'isolation-importer.test.ts',
  'imports(before)': 'isolation-importer.test.ts',
  'importSetMapping(id)': 'isolation-importer.test.ts',
  'importCommit(id)': 'isolation-importer.test.ts',
  'chatConversation(id)': 'isolation-chat.test.ts',
  'chatConversations(before)': 'isolation-chat.test.ts',
  'chatSendMessage(conversationId)': 'isolation-chat.test.ts',
  // A subscription: proven over a real stream beside the plugin's other stream tests.
  'chatMessageReceived(conversationId)': '../plugins/chat/streams.test.ts',
};

/**
 * UUID arguments that name no row of the caller's workspace, on purpose:
 * - `login(workspaceId)` and `requestPasswordReset(workspaceId)` are open to anonymous
 *   callers and choose which workspace's account an address means; there is no "own"
 *   workspace yet to isolate from.
 */
export const NOT_WORKSPACE_ROWS: readonly string[] = [
  'login(workspaceId)',
  'requestPasswordReset(workspaceId)',
];

/**
 * `field(arg)` / `field(arg.inner)` for every UUID-typed argument (or UUID field of an
 * input object argument, at any depth) of the Query, Mutation and Subscription roots.
 */
export function uuidArguments(schema: GraphQLSchema): string[] {
  const found: string[] = [];
  const walk = (
    field: string,
    path: string,
    holder: GraphQLArgument | GraphQLInputField,
    seen: ReadonlySet<string>,
  ) => {
    const type = getNamedType(holder.type);
    if (type.name === 'UUID') found.push(`${field}(${path})`);
    if (isInputObjectType(type) && !seen.has(type.name)) {
      for (const inner of Object.values(type.getFields())) {
        walk(field, `${path}.${inner.name}`, inner, new Set([...seen, type.name]));
      }
    }
  };
  for (const root of [
    schema.getQueryType(),
    schema.getMutationType(),
    schema.getSubscriptionType(),
  ]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      for (const arg of field.args) walk(field.name, arg.name, arg, new Set());
    }
  }
  return found.sort();
}
