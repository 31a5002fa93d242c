import { sql } from 'drizzle-orm';
import { defineCommand, type ArgsDef } from 'citty';
import { parseEmail, parseName } from '../../users/rules.js';
import { createAccount } from '../../users/service.js';
import { createWorkspace, workspacesWithName } from '../../workspaces/service.js';
import { asArg, createAdminAndRecord, newPasswordArg } from '../account-commands.js';
import { describeWorkspace, inTransaction } from '../accounts.js';
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
  'admin-password': newPasswordArg,
  as: asArg,
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
    await createAdminAndRecord(
      values.as,
      ['-admin-password', values['admin-password']],
      (db, password) =>
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
      ({ user, workspace }) => ({
        said: `created workspace ${describeWorkspace(workspace)} with admin ${user.email} (${user.id})`,
        command: 'workspace:create',
        detail: { workspaceName: workspace.name },
        change: `workspace "${workspace.name}" was created`,
      }),
    );
  },
});
