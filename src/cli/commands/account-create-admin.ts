import { defineCommand, type ArgsDef } from 'citty';
import { parseEmail, parseName } from '../../users/rules.js';
import { asArg, createAdminAndRecord, newPasswordArg } from '../account-commands.js';
import { createAdminAccount, describeWorkspace } from '../accounts.js';
import { checkOptions, forOption } from '../options.js';

const args = {
  email: { type: 'string', required: true, description: 'sign-in address of the new admin' },
  name: { type: 'string', required: true, description: "the admin's name" },
  password: newPasswordArg,
  workspace: {
    type: 'string',
    description:
      'id or name of the workspace; left out, the only one (an empty database gets a first workspace, named by this option when given)',
  },
  as: asArg,
} as const satisfies ArgsDef;

export default defineCommand({
  meta: {
    name: 'account:create-admin',
    description: 'Create an admin account (migrating the core first) and record who did it',
  },
  args,
  async run({ args: values, rawArgs }) {
    checkOptions(rawArgs, args);
    const email = forOption('-email', () => parseEmail(values.email));
    const name = forOption('-name', () => parseName(values.name));
    await createAdminAndRecord(
      values.as,
      ['-password', values.password],
      (db, password) =>
        createAdminAccount(db, { email, name, password, workspace: values.workspace }),
      ({ user, workspace, workspaceCreated }) => ({
        said: `created admin ${user.email} (${user.id}) in ${workspaceCreated ? 'the new ' : ''}workspace ${describeWorkspace(workspace)}`,
        command: 'account:create-admin',
        detail: { workspaceCreated },
        change: `admin ${user.email} was created`,
      }),
    );
  },
});
