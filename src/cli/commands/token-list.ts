import { defineCommand, type ArgsDef } from 'citty';
import { EVERY_AREA } from '../../auth/access.js';
import type { ApiToken } from '../../auth/tables.js';
import { listApiTokens } from '../../auth/tokens.js';
import { withDatabase } from '../account-commands.js';
import { describeWorkspace, ownerWorkspaceArg, requireAccount } from '../accounts.js';
import { commandConfig } from '../config.js';
import { checkOptions, formatTable, when } from '../options.js';

const args = {
  email: { type: 'string', required: true, description: "the tokens' owner's sign-in address" },
  workspace: ownerWorkspaceArg,
  all: { type: 'boolean', description: 'also list tokens that predate scopes' },
} as const satisfies ArgsDef;

/** More than any account holds; the list is never paged. */
const LIST_MAX = 10_000;

function scopesOf(token: ApiToken): string {
  if (token.scopes === null) return 'every area (predates scopes)';
  if (token.scopes.includes(EVERY_AREA)) return 'every area';
  return token.scopes.join(',');
}

export default defineCommand({
  meta: {
    name: 'token:list',
    description: "An account's API tokens, newest first (never their secrets)",
  },
  args,
  async run({ args: values, rawArgs }) {
    checkOptions(rawArgs, args);
    await withDatabase(commandConfig(), async (database) => {
      const { user, workspace } = await requireAccount(database.db, values.email, values.workspace);
      const every = await listApiTokens(database.db, workspace.id, user.id, {
        withLegacy: true,
        limit: LIST_MAX,
      });
      const shown = values.all ? every : every.filter((token) => token.scopes !== null);
      const hidden = every.length - shown.length;
      const owner = `${user.email} in workspace ${describeWorkspace(workspace)}`;
      if (shown.length === 0) console.error(`no tokens for ${owner}`);
      else {
        console.log(
          formatTable(
            ['NAME', 'ID', 'SCOPES', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED'],
            shown.map((token) => [
              token.name,
              token.id,
              scopesOf(token),
              when(token.createdAt),
              when(token.expiresAt, 'never'),
              when(token.lastUsedAt, 'never'),
              when(token.revokedAt, 'no'),
            ]),
          ),
        );
      }
      if (hidden > 0) {
        console.error(
          `${hidden} token${hidden === 1 ? '' : 's'} that predate${hidden === 1 ? 's' : ''} scopes not shown; -all lists ${hidden === 1 ? 'it' : 'them'}`,
        );
      }
    });
  },
});
