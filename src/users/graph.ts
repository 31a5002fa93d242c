import { capabilitiesOf, grantableRoles } from '../auth/access.js';
import { signedIn } from '../context.js';
import { builder } from '../graph/builder.js';
import { connectionOf } from '../graph/connection.js';
import { getUser, listUsers } from './service.js';
import type { User } from './tables.js';

export const AccountObject = builder.objectRef<User>('Account').implement({
  description: 'An account of the workspace (SPEC 2.2).',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    email: t.exposeString('email'),
    name: t.exposeString('name'),
    role: t.string({
      description: 'The role the account holds; empty for an account with no role.',
      resolve: (user) => user.role ?? '',
    }),
    capabilities: t.stringList({
      description: 'The capabilities the account holds through its role.',
      resolve: (user, _args, ctx) => [...capabilitiesOf(ctx.access, user.role)],
    }),
    grantable: t.stringList({
      description: 'Every role whose capabilities the account already holds itself.',
      resolve: (user, _args, ctx) =>
        grantableRoles(ctx.access, capabilitiesOf(ctx.access, user.role)),
    }),
    disabled: t.boolean({ resolve: (user) => user.disabledAt !== null }),
    pending: t.boolean({
      description: 'Invited and not yet activated.',
      resolve: (user) => user.passwordHash === null,
    }),
    locale: t.string({
      nullable: true,
      description: 'The interface language the account chose; null follows the browser.',
      resolve: (user) => user.locale,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const AccountConnection = connectionOf('Account', AccountObject);

builder.queryFields((t) => ({
  me: t.field({
    type: AccountObject,
    description: 'The signed-in account, with its role, capabilities and grantable roles.',
    resolve: (_root, _args, ctx) => getUser(ctx, signedIn(ctx).actor.userId),
  }),
  users: t.field({
    type: AccountConnection,
    description: "The workspace's accounts by name. Open to every member.",
    authScopes: { access: { scope: 'users:read' } },
    args: {
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
    },
    resolve: (_root, args, ctx) => listUsers(ctx, args),
  }),
}));
