import { defineCommand, type ArgsDef } from 'citty';
import { buildCatalogue, EVERY_AREA } from '../../auth/access.js';
import { createApiToken, expiryOf, MAX_TOKEN_DAYS, validateScopes } from '../../auth/tokens.js';
import { refuse } from '../../errors.js';
import { loadPlugins } from '../../plugin-host/host.js';
import {
  asArg,
  operatorOf,
  recordChange,
  recordTimeoutMs,
  stopOnVariable,
  withDatabase,
} from '../account-commands.js';
import { describeWorkspace, ownerWorkspaceArg, requireAccount } from '../accounts.js';
import { repeatedOption } from '../argv.js';
import { commandConfig, problemsStoppingPluginCommands, stopOn } from '../config.js';
import { CommandError, UsageError } from '../errors.js';
import { checkOptions, forOption, plainWholeNumber, when } from '../options.js';

const args = {
  email: { type: 'string', required: true, description: "the token owner's sign-in address" },
  workspace: ownerWorkspaceArg,
  name: { type: 'string', required: true, description: 'a name to tell the token apart' },
  scope: {
    type: 'string',
    description:
      'area:access (read or write) the token may reach; repeat for more; left out, every area',
  },
  ttl: {
    type: 'string',
    description: `days until it expires (0 to ${MAX_TOKEN_DAYS}; 0 or never: no expiry); default SVC_TOKEN_TTL_DAYS (90)`,
  },
  as: asArg,
} as const satisfies ArgsDef;

/** `-ttl`: days, or null for no expiry; undefined when left out. */
function ttlOf(text: string | undefined): number | null | undefined {
  if (text === undefined) return undefined;
  const value = text.trim();
  if (value === 'never') return null;
  const days = plainWholeNumber(value);
  if (days === null && /^-\d+$/.test(value)) {
    throw new CommandError(`-ttl: ${refuse('lifetime_negative').message} (lifetime_negative)`);
  }
  if (days === null) {
    throw new UsageError(`-ttl takes a whole number of days or never (got "${text}")`);
  }
  forOption('-ttl', () => expiryOf(days));
  return days;
}

function describeScopes(scopes: readonly string[] | null): string {
  if (scopes === null || scopes.includes(EVERY_AREA)) return 'every area';
  return scopes.join(', ');
}

export default defineCommand({
  meta: {
    name: 'token:create',
    description: 'Mint an API token for an account; prints the secret once, alone on stdout',
  },
  args,
  async run({ args: values, rawArgs }) {
    checkOptions(rawArgs, args, ['scope']);
    const operator = operatorOf(values.as);
    const ttl = ttlOf(values.ttl);
    const loaded = commandConfig();
    const timeoutMs = recordTimeoutMs(loaded);
    // SPEC 8.2: a refused SVC_TOKEN_TTL_DAYS stops the command unless -ttl is given.
    if (ttl === undefined) stopOnVariable(loaded, 'SVC_TOKEN_TTL_DAYS');
    stopOn(problemsStoppingPluginCommands(loaded.problems));
    const ttlDays = ttl === undefined ? loaded.config.commands.tokenTtlDays : ttl;
    const name = values.name.trim();
    if (!name) {
      throw new CommandError(
        `-name: ${refuse('token_name_required').message} (token_name_required)`,
      );
    }
    const catalogue = buildCatalogue(await loadPlugins());
    const written = repeatedOption(rawArgs, 'scope');
    const scopes = written.length > 0 ? written : null;
    forOption('-scope', () => validateScopes(scopes, catalogue));
    await withDatabase(loaded, async (database) => {
      const { user, workspace } = await requireAccount(database.db, values.email, values.workspace);
      if (workspace.deactivatedAt) {
        throw new CommandError(
          `-workspace: workspace ${describeWorkspace(workspace)} is deactivated`,
        );
      }
      if (user.disabledAt) {
        throw new CommandError(
          `-email: the account ${user.email} is disabled; a token for it would not work`,
        );
      }
      const { token, secret } = await createApiToken(database.db, catalogue, {
        workspaceId: workspace.id,
        userId: user.id,
        name,
        scopes,
        ttlDays,
      });
      console.error(
        `token "${token.name}" (${token.id}) for ${user.email} in workspace ${describeWorkspace(workspace)}: ` +
          `${describeScopes(token.scopes)}; expires ${when(token.expiresAt, 'never')}. ` +
          'The secret on stdout is shown once and cannot be recovered, only replaced.',
      );
      console.log(secret);
      await recordChange(
        database.db,
        operator,
        {
          command: 'token:create',
          workspaceId: workspace.id,
          subject: user.email,
          detail: {
            accountId: user.id,
            tokenId: token.id,
            tokenName: token.name,
            scopes: token.scopes,
            expiresAt: token.expiresAt?.toISOString() ?? null,
          },
        },
        timeoutMs,
        `token "${token.name}" (${token.id}) was created`,
      );
    });
  },
});
