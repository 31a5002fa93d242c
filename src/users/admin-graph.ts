import { LoginPayload } from '../auth/graph.js';
import { builder } from '../graph/builder.js';
import { setUserDisabled, setUserRole } from './admin.js';
import { AccountObject } from './graph.js';
import { acceptInvitation, inviteUser, resendInvite, type InviteResult } from './invitations.js';
import { requestPasswordReset, resetPassword } from './resets.js';
import { passwordLimits } from '../auth/graph.js';
import { costs } from '../graph/complexity.js';
import { PASSWORD, WRITE } from '../graph/costs.js';
import { limited } from '../graph/input-limits.js';
import { TEXT_MAX } from '../limits.js';
import { NAME_MAX } from './rules.js';

const InvitePayload = builder.objectRef<InviteResult>('InvitePayload').implement({
  description: 'An invited account and, when no mail carried it, its activation link.',
  fields: (t) => ({
    user: t.field({ type: AccountObject, resolve: (p) => p.user }),
    activationLink: t.string({
      nullable: true,
      description:
        'Null when the link was mailed. Without SVC_SMTP_HOST (or when the relay refused ' +
        'the mail) the link to pass on: `/invitation#token=...` on this origin, or under ' +
        'SVC_PUBLIC_URL when one is configured.',
      resolve: (p) => p.activationLink,
    }),
  }),
});

const manageUsers = { access: { scope: 'users:write', capability: 'manage_users' } } as const;
const nameLimits = limited({ maxLength: NAME_MAX, tooLong: 'name_too_long' });
const word = limited({ maxLength: TEXT_MAX.word });

builder.mutationFields((t) => ({
  invite: t.field({
    type: InvitePayload,
    description:
      'Creates a pending account and its invitation link (SVC_INVITE_TTL). `role` defaults ' +
      'to member; an empty string invites an account with no role.',
    authScopes: manageUsers,
    args: {
      email: t.arg.string({ required: true }),
      name: t.arg.string({ required: true, extensions: nameLimits }),
      role: t.arg.string({ required: false, extensions: word }),
    },
    resolve: (_root, args, ctx) => inviteUser(ctx, args),
  }),
  resendInvite: t.field({
    type: InvitePayload,
    description: "Replaces a pending account's invitation link; older links stop working.",
    authScopes: manageUsers,
    args: { userId: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => resendInvite(ctx, args.userId),
  }),
  setUserDisabled: t.field({
    type: AccountObject,
    description: 'Disables (ending every session and stopping every token) or re-enables.',
    authScopes: manageUsers,
    args: {
      userId: t.arg({ type: 'UUID', required: true }),
      disabled: t.arg.boolean({ required: true }),
    },
    resolve: (_root, args, ctx) => setUserDisabled(ctx, args),
  }),
  setUserRole: t.field({
    type: AccountObject,
    description: "Sets an account's role; an empty string leaves it with no role.",
    authScopes: manageUsers,
    args: {
      userId: t.arg({ type: 'UUID', required: true }),
      role: t.arg.string({ required: true, extensions: word }),
    },
    resolve: (_root, args, ctx) => setUserRole(ctx, args),
  }),
  acceptInvitation: t.field({
    type: LoginPayload,
    description:
      'Activates an invited account with a password (and optionally a corrected name) and ' +
      'signs it in. Open to anonymous callers; the token is the link fragment.',
    skipTypeScopes: true,
    extensions: costs({ cost: WRITE + PASSWORD }),
    args: {
      token: t.arg.string({ required: true }),
      password: t.arg.string({ required: true, extensions: passwordLimits }),
      name: t.arg.string({ required: false, extensions: nameLimits }),
    },
    resolve: async (_root, args, ctx) => ({ me: await acceptInvitation(ctx, args) }),
  }),
  requestPasswordReset: t.boolean({
    description:
      'Mails a reset link when the address names an active account; always true. ' +
      'Open to anonymous callers; SVC_RESET_ATTEMPTS per client address, then RATE_LIMITED.',
    skipTypeScopes: true,
    args: {
      email: t.arg.string({ required: true }),
      workspaceId: t.arg({
        type: 'UUID',
        required: false,
        description: "Which workspace's account, when the address has several (else the oldest).",
      }),
    },
    resolve: (_root, args, ctx) => requestPasswordReset(ctx, args),
  }),
  resetPassword: t.field({
    type: LoginPayload,
    description:
      "Sets a new password from a reset link, ends the account's other sessions and signs " +
      'it in. Open to anonymous callers.',
    skipTypeScopes: true,
    extensions: costs({ cost: WRITE + PASSWORD }),
    args: {
      token: t.arg.string({ required: true }),
      password: t.arg.string({ required: true, extensions: passwordLimits }),
    },
    resolve: async (_root, args, ctx) => ({ me: await resetPassword(ctx, args) }),
  }),
}));
