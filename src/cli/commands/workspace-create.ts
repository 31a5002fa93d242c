import { sql } from 'drizzle-orm';
import { defineCommand, type ArgsDef } from 'citty';
import { createLogger } from '../../log.js';
import { parseEmail, parseName } from '../../users/rules.js';
import { createAccount } from '../../users/service.js';
import { createWorkspace, workspacesWithName } from '../../workspaces/service.js';
import {
  migrateThenChange,
  operatorOf,
  passwordFrom,
  recordChange,
  recordTimeoutMs,
  withDatabase,
} from '../account-commands.js';
import { describeWorkspace, inTransaction } from '../accounts.js';
import { commandConfig } from '../config.js';
import { CommandError, UsageError } from '../errors.js';
import { checkOptions, forOption } from '../options.js';

const args = {
  name: { type: 'string', required: true, description: 'name of the new workspace' },
  'admin-email': {
    type: 'string',
    required: true,
    description: 'sign-in address of its first admin',
  },
  'admin-name': { type: 'string', required: true, description: "the first admin's name" },
  'admin-password': {
    type: 'string',
    description:
      'sign-in password (12 to 1024 characters); left out, it is read from stdin when stdin is not a terminal, else generated and printed once',
  },
  as: {
    type: 'string',
    description: 'operator named in the account-change record (default: the OS user name)',
  },
} as const satisfies ArgsDef;

const NAME_MAX = 200;

/** A workspace name: trimmed, not empty, one line of at most 200 characters. */
export function parseWorkspaceName(text: string): string {
  const name = text.trim();
  if (!name) throw new UsageError('-name needs the name of the new workspace');
  if ([...name].length > NAME_MAX || /\p{Cc}/u.test(name)) {
    throw new UsageError(`-name must be at most ${NAME_MAX} characters on one line`);
  }
  return name;
}

export default defineCommand({
  meta: {
    name: 'workspace:create',
    description:
      'Create a workspace with its first admin in one transaction (migrating the core first) and record who did it',
  },
  args,
  async run({ args: values, rawArgs }) {
    checkOptions(rawArgs, args);
    const name = parseWorkspaceName(values.name);
    const email = forOption('-admin-email', () => parseEmail(values['admin-email']));
    const adminName = forOption('-admin-name', () => parseName(values['admin-name']));
    const operator = operatorOf(values.as);
    const loaded = commandConfig();
    const timeoutMs = recordTimeoutMs(loaded);
    const [password, passwordSource] = await passwordFrom(
      '-admin-password',
      values['admin-password'],
    );
    await withDatabase(loaded, async (database) => {
      const { workspace, user } = await migrateThenChange(database, loaded, createLogger(), (db) =>
        inTransaction(db, async (tx) => {
          // Names are not unique in the table; one lock per database keeps two commands
          // from both finding a name free.
          await tx.execute(sql`select pg_advisory_xact_lock(hashtext('svc:workspace-name'))`);
          const same = await workspacesWithName(tx, name);
          if (same.length > 0) {
            throw new CommandError(
              `-name: a workspace is already named "${name}": ${same.map(describeWorkspace).join(', ')}`,
            );
          }
          const created = await createWorkspace(tx, { name });
          const admin = await createAccount(tx, created.id, {
            email,
            name: adminName,
            password,
            role: 'admin',
          });
          return { workspace: created, user: admin };
        }),
      );
      console.log(
        `created workspace ${describeWorkspace(workspace)} with admin ${user.email} (${user.id})`,
      );
      if (passwordSource === 'generated') console.log(`password: ${password}`);
      await recordChange(
        database.db,
        operator,
        {
          command: 'workspace:create',
          workspaceId: workspace.id,
          subject: user.email,
          detail: {
            workspaceName: workspace.name,
            accountId: user.id,
            name: user.name,
            role: user.role,
            passwordSource,
          },
        },
        timeoutMs,
        `workspace "${workspace.name}" was created`,
      );
    });
  },
});
