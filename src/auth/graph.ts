import { builder } from '../graph/builder.js';
import { costs } from '../graph/complexity.js';
import { PASSWORD, WRITE } from '../graph/costs.js';
import { limited } from '../graph/input-limits.js';
import { PASSWORD_MAX } from './passwords.js';
import { AccountObject } from '../users/graph.js';
import type { User } from '../users/tables.js';
import { login, logout } from './login.js';

export const LoginPayload = builder.objectRef<{ me: User }>('LoginPayload').implement({
  fields: (t) => ({ me: t.field({ type: AccountObject, resolve: (p) => p.me }) }),
});

/** No password is longer than SPEC 2.2's cap, so none past it is checked. */
export const passwordLimits = limited({ maxLength: PASSWORD_MAX, tooLong: 'password_too_long' });

builder.mutationFields((t) => ({
  login: t.field({
    type: LoginPayload,
    description:
      'Signs in with email and password and sets the session cookie. Open to anonymous callers; ' +
      '10 failures per client address per minute, then RATE_LIMITED.',
    skipTypeScopes: true,
    extensions: costs({ cost: WRITE + PASSWORD }),
    args: {
      email: t.arg.string({ required: true }),
      password: t.arg.string({ required: true, extensions: passwordLimits }),
      workspaceId: t.arg({
        type: 'UUID',
        required: false,
        description: 'Which workspace to sign in to when the address has accounts in several.',
      }),
    },
    resolve: async (_root, args, ctx) => ({ me: await login(ctx, args) }),
  }),
  logout: t.boolean({
    description: 'Ends the browser session and clears its cookie.',
    authScopes: { access: { session: true } },
    resolve: (_root, _args, ctx) => logout(ctx),
  }),
}));
