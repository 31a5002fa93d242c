// SPEC 5: every root field's guard, proven over every kind of caller. The table below is
// the contract; a root field missing from it fails the first test.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
} from 'graphql';
import { randomUUID } from 'node:crypto';
import { scopesAllow, type AccessRule, type Scope } from '../../src/auth/access.js';
import { buildSchema } from '../../src/graph/schema.js';
import type { User } from '../../src/users/tables.js';
import { bearer, createUser, sessionCookieFor, tokenFor } from '../support/factories.js';
import { startTestService, type GraphBody, type TestService } from '../support/service.js';

type Expected = 'open' | 'signed-in' | AccessRule;
const manageUsers: AccessRule = { scope: 'users:write', capability: 'manage_users' };
/** The fields plugin declares the capability; the stock admin holds it. */
const manageFields: AccessRule = { scope: 'fields:write', capability: 'manage_fields' };

const expectedRules: Record<string, Expected> = {
  'Query.me': 'signed-in',
  'Query.users': { scope: 'users:read' },
  'Query.version': { scope: 'meta:read' },
  'Query.adminSettings': { scope: 'meta:read' },
  'Query.locale': 'open',
  'Query.supportedLocales': { scope: 'meta:read' },
  'Query.apiTokens': { session: true },
  'Mutation.login': 'open',
  'Mutation.logout': { session: true },
  'Mutation.invite': manageUsers,
  'Mutation.resendInvite': manageUsers,
  'Mutation.setUserDisabled': manageUsers,
  'Mutation.setUserRole': manageUsers,
  'Mutation.acceptInvitation': 'open',
  'Mutation.requestPasswordReset': 'open',
  'Mutation.resetPassword': 'open',
  'Mutation.setLocale': { scope: 'users:write' },
  'Mutation.apiTokenCreate': { session: true },
  'Mutation.apiTokenRevoke': { session: true },
  'Query.contact': { scope: 'contacts:read' },
  'Query.contacts': { scope: 'contacts:read' },
  'Query.contactPage': { scope: 'contacts:read' },
  'Query.contactDuplicates': { scope: 'contacts:read' },
  'Mutation.createContact': { scope: 'contacts:write' },
  'Mutation.renameContact': { scope: 'contacts:write' },
  'Mutation.addContactIdentity': { scope: 'contacts:write' },
  'Mutation.deleteContactIdentity': { scope: 'contacts:write' },
  // Erasure (docs/contacts.md): the stock admin holds erase_records.
  'Mutation.deleteContact': { scope: 'contacts:write', capability: 'erase_records' },
  'Mutation.mergeContacts': { scope: 'contacts:write', capability: 'erase_records' },
  'Query.task': { scope: 'tasks:read' },
  'Query.tasks': { scope: 'tasks:read' },
  'Mutation.createTask': { scope: 'tasks:write' },
  'Mutation.updateTask': { scope: 'tasks:write' },
  // Its assignee, creator or a holder of erase_records: decided on the task (tests/tasks/delete.test.ts).
  'Mutation.deleteTask': { scope: 'tasks:write' },
  'Query.webhooks': { scope: 'webhooks:read' },
  'Mutation.createWebhook': { scope: 'webhooks:write', capability: 'manage_webhooks' },
  'Mutation.deleteWebhook': { scope: 'webhooks:write' },
  // Streams are proven over Server-Sent Events in tests/events.
  'Subscription.coreEvent': 'signed-in',
  // The stock plugins'.
  'Query.notes': { scope: 'notes:read' },
  'Mutation.noteCreate': { scope: 'notes:write' },
  'Query.fields': { scope: 'fields:read' },
  'Query.reservedFieldNames': { scope: 'fields:read' },
  'Mutation.defineField': manageFields,
  'Mutation.archiveField': manageFields,
  'Mutation.orderFields': manageFields,
  'Mutation.writeContactFields': { scope: 'contacts:write' },
  'Mutation.addContactFieldEntry': { scope: 'contacts:write' },
  'Mutation.updateContactFieldEntry': { scope: 'contacts:write' },
  'Mutation.deleteContactFieldEntry': { scope: 'contacts:write' },
  'Query.imports': { scope: 'imports:read' },
  'Query.importJob': { scope: 'imports:read' },
  'Mutation.importUpload': { scope: 'imports:write' },
  'Query.importFields': { scope: 'imports:read' },
  'Mutation.importSetMapping': { scope: 'imports:write' },
  'Mutation.importCommit': { scope: 'imports:write' },
  'Mutation.exportContacts': { scope: 'imports:read', alsoScope: 'contacts:read' },
  'Query.chatConversations': { scope: 'chat:read' },
  'Query.chatRefusedInbound': { scope: 'chat:read', capability: 'manage_chat' },
  'Query.chatConversation': { scope: 'chat:read' },
  'Mutation.chatSendMessage': { scope: 'chat:write' },
  'Mutation.chatConnect': { scope: 'chat:write', capability: 'manage_chat' },
  'Mutation.chatDisconnect': { scope: 'chat:write', capability: 'manage_chat' },
  'Subscription.chatConversationEvent': { scope: 'chat:read' },
  'Subscription.chatMessageReceived': { scope: 'chat:read' },
};

interface PothosExtensions {
  pothosOptions?: { authScopes?: { access?: AccessRule }; skipTypeScopes?: boolean };
}

function declaredRule(field: GraphQLField<unknown, unknown>): Expected {
  const options = (field.extensions as PothosExtensions).pothosOptions ?? {};
  if (options.skipTypeScopes) return 'open';
  return options.authScopes?.access ?? 'signed-in';
}

function rootFields(): [string, GraphQLField<unknown, unknown>][] {
  const schema = buildSchema();
  const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()];
  return roots
    .filter((type): type is GraphQLObjectType => Boolean(type))
    .flatMap((type) =>
      Object.values(type.getFields()).map(
        (f) => [`${type.name}.${f.name}`, f] as [string, GraphQLField<unknown, unknown>],
      ),
    );
}

/** Marks an `Upload` variable: sendMultipart sends a file in its place. */
const UPLOAD_SAMPLE = 'upload:sample';

/** A value of `type` good enough to pass validation; the resolver may still refuse it. */
function sample(type: GraphQLInputType): unknown {
  const inner = getNullableType(type);
  if (isListType(inner)) return [sample(inner.ofType)];
  if (isEnumType(inner)) return inner.getValues()[0]?.value;
  if (isInputObjectType(inner)) {
    return Object.fromEntries(
      Object.values(inner.getFields())
        .filter((f) => isNonNullType(f.type))
        .map((f) => [f.name, sample(f.type)]),
    );
  }
  if (isScalarType(inner)) {
    const byName: Record<string, unknown> = {
      UUID: randomUUID(),
      Int: 1,
      Float: 1,
      Boolean: false,
      Date: '2024-01-01',
      DateTime: '2024-01-01T00:00:00Z',
      Upload: UPLOAD_SAMPLE,
    };
    return byName[inner.name] ?? 'x';
  }
  return null;
}

/**
 * An operation whose `Upload` variables travel as files of a multipart request (GraphQL
 * multipart request specification), each a one-line CSV.
 */
async function sendMultipart(
  query: string,
  variables: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<{ body: GraphBody }> {
  const form = new FormData();
  const files = Object.keys(variables).filter((name) => variables[name] === UPLOAD_SAMPLE);
  const nulled = Object.fromEntries(files.map((name) => [name, null]));
  form.append('operations', JSON.stringify({ query, variables: { ...variables, ...nulled } }));
  form.append(
    'map',
    JSON.stringify(Object.fromEntries(files.map((name, i) => [i, [`variables.${name}`]]))),
  );
  files.forEach((_name, i) => form.append(String(i), new Blob(['name\nAda\n']), 'sample.csv'));
  const response = await svc.request(`/api/graphql`, { method: 'POST', headers, body: form });
  return { body: (await response.json()) as GraphBody };
}

function operationFor(path: string, field: GraphQLField<unknown, unknown>) {
  const [root] = path.split('.');
  const args = field.args.filter((a) => isNonNullType(a.type));
  const variables = Object.fromEntries(args.map((a) => [a.name, sample(a.type)]));
  const definitions = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
  const passing = args.map((a) => `${a.name}: $${a.name}`).join(', ');
  const selection =
    isScalarType(getNamedType(field.type)) || isEnumType(getNamedType(field.type))
      ? ''
      : ' { __typename }';
  const keyword = root === 'Mutation' ? 'mutation' : 'query';
  const query = `${keyword}${definitions ? ` (${definitions})` : ''} { ${field.name}${passing ? `(${passing})` : ''}${selection} }`;
  return { query, variables };
}

type Outcome =
  | 'allowed'
  | 'authentication_required'
  | 'session_required'
  | 'scope_missing'
  | 'capability_missing';
const refusals = new Set([
  'authentication_required',
  'session_required',
  'scope_missing',
  'capability_missing',
]);

interface Caller {
  label: string;
  role: string | null;
  /** null: no credential; 'session'; or the token's scopes (null = every area). */
  kind: 'anonymous' | 'session' | 'token';
  scopes?: string[] | null;
  headers(): Promise<Record<string, string>>;
}

function expectedOutcome(rule: Expected, caller: Caller, capabilities: Set<string>): Outcome {
  if (rule === 'open') return 'allowed';
  if (caller.kind === 'anonymous') return 'authentication_required';
  if (rule === 'signed-in') return 'allowed';
  if (rule.session && caller.kind === 'token') return 'session_required';
  if (
    rule.scope &&
    caller.kind === 'token' &&
    !scopesAllow(caller.scopes ? new Set(caller.scopes) : null, rule.scope)
  ) {
    return 'scope_missing';
  }
  if (
    rule.alsoScope &&
    caller.kind === 'token' &&
    !scopesAllow(caller.scopes ? new Set(caller.scopes) : null, rule.alsoScope)
  ) {
    return 'scope_missing';
  }
  if (rule.capability && !capabilities.has(rule.capability)) return 'capability_missing';
  return 'allowed';
}

let svc: TestService;
const accounts: Record<string, User> = {};

beforeAll(async () => {
  // Every stock plugin is loaded, so their root fields are held to the table too.
  svc = await startTestService({ plugins: {} });
  accounts.admin = svc.admin;
  accounts.member = await createUser(svc.db.database.db, svc.workspace, { role: 'member' });
  accounts.none = await createUser(svc.db.database.db, svc.workspace, { role: null });
});

afterAll(() => svc.stop());

function callers(): Caller[] {
  const db = () => svc.db.database.db;
  const list: Caller[] = [
    { label: 'anonymous', role: null, kind: 'anonymous', headers: async () => ({}) },
  ];
  for (const role of ['admin', 'member', 'none'] as const) {
    const user = () => accounts[role] as User;
    list.push({
      label: `${role} session`,
      role,
      kind: 'session',
      headers: async () => ({ cookie: await sessionCookieFor(db(), user()) }),
    });
    list.push({
      label: `${role} token, every area`,
      role,
      kind: 'token',
      scopes: null,
      headers: async () => bearer(await tokenFor(db(), user())),
    });
    for (const area of svc.service.access.areas) {
      for (const access of ['read', 'write'] as const) {
        const scopes = [`${area}:${access}` as Scope];
        list.push({
          label: `${role} token ${scopes[0]}`,
          role,
          kind: 'token',
          scopes,
          headers: async () =>
            bearer(await tokenFor(db(), user(), { scopes, catalogue: svc.service.access })),
        });
      }
    }
  }
  return list;
}

describe('root field guards', () => {
  test('every root field declares exactly the guard the contract names', () => {
    const declared = Object.fromEntries(
      rootFields().map(([path, field]) => [path, declaredRule(field)]),
    );
    expect(declared).toEqual(expectedRules);
  });

  test('every kind of caller is let through or refused with the reason the rules give, on every root field', async () => {
    const capabilities: Record<string, Set<string>> = {
      admin: new Set([
        'manage_users',
        'manage_webhooks',
        'erase_records',
        'manage_fields',
        'manage_chat',
      ]),
      member: new Set(),
      none: new Set(),
    };
    const mismatches: string[] = [];
    for (const caller of callers()) {
      for (const [path, field] of rootFields()) {
        if (path.startsWith('Subscription.')) continue;
        const rule = expectedRules[path] ?? 'signed-in';
        const want = expectedOutcome(
          rule,
          caller,
          capabilities[caller.role ?? 'none'] as Set<string>,
        );
        const { query, variables } = operationFor(path, field);
        const headers = await caller.headers();
        const send = caller.kind === 'anonymous' ? svc.anonymous : svc.graph;
        const { body } = field.args.some((a) => getNamedType(a.type).name === 'Upload')
          ? await sendMultipart(query, variables, headers)
          : await send(query, variables, headers);
        const reason = body.errors?.[0]?.extensions.reason;
        const got: Outcome =
          typeof reason === 'string' && refusals.has(reason) ? (reason as Outcome) : 'allowed';
        if (got !== want)
          mismatches.push(
            `${caller.label} → ${path}: expected ${want}, got ${got} (${JSON.stringify(body.errors?.[0])})`,
          );
      }
    }
    expect(mismatches).toEqual([]);
  }, 300_000);
});

describe('SPEC 5: who reaches invite', () => {
  const INVITE =
    'mutation ($email: String!) { invite(email: $email, name: "Invitee") { user { email } } }';
  let n = 0;
  const email = () => `invitee-${++n}-${randomUUID().slice(0, 8)}@example.com`;

  test('an admin session: yes', async () => {
    const cookie = await sessionCookieFor(svc.db.database.db, svc.admin);
    const address = email();
    const { body } = await svc.graph(INVITE, { email: address }, { cookie });
    expect(body.data).toEqual({ invite: { user: { email: address } } });
  });

  test('an admin token scoped users:write: yes', async () => {
    const token = await tokenFor(svc.db.database.db, svc.admin, { scopes: ['users:write'] });
    const address = email();
    const { body } = await svc.graph(INVITE, { email: address }, bearer(token));
    expect(body.data).toEqual({ invite: { user: { email: address } } });
  });

  test('an admin token scoped contacts:read: no, scope required: users:write', async () => {
    const token = await tokenFor(svc.db.database.db, svc.admin, { scopes: ['contacts:read'] });
    const { body } = await svc.graph(INVITE, { email: email() }, bearer(token));
    expect(body.data).toBeNull();
    expect(body.errors?.[0]).toMatchObject({
      message: 'scope required: users:write',
      path: ['invite'],
      extensions: {
        code: 'UNAUTHORIZED',
        scope: 'users:write',
        reason: 'scope_missing',
        meta: { scope: 'users:write' },
      },
    });
    expect(body.errors?.[0]?.extensions.capability).toBeUndefined();
  });

  test('a member token scoped with every area: no, admin required', async () => {
    const token = await tokenFor(svc.db.database.db, accounts.member as User);
    const { body } = await svc.graph(INVITE, { email: email() }, bearer(token));
    expect(body.data).toBeNull();
    expect(body.errors?.[0]).toMatchObject({
      message: 'admin required',
      extensions: {
        code: 'UNAUTHORIZED',
        capability: 'manage_users',
        reason: 'capability_missing',
        meta: { scope: 'users:write', capability: 'manage_users' },
      },
    });
  });

  test('a caller lacking both the scope and the capability is told about the scope', async () => {
    const token = await tokenFor(svc.db.database.db, accounts.member as User, {
      scopes: ['contacts:read'],
    });
    const { body } = await svc.graph(INVITE, { email: email() }, bearer(token));
    expect(body.errors?.[0]?.message).toBe('scope required: users:write');
  });
});
