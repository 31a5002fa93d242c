import { defineCommand, type ArgsDef } from 'citty';
import { createLogger } from '../../log.js';
import { parseEmail, parseName } from '../../users/rules.js';
import {
  migrateThenChange,
  operatorOf,
  passwordFrom,
  recordChange,
  recordTimeoutMs,
  withDatabase,
} from '../account-commands.js';
import { createAdminAccount, describeWorkspace } from '../accounts.js';
import { commandConfig } from '../config.js';
import { checkOptions, forOption } from '../options.js';

const args = {
  email: { type: 'string', required: true, description: 'sign-in address of the new admin' },
  name: { type: 'string', required: true, description: "the admin's name" },
  password: {
    type: 'string',
    description:
      'sign-in password (12 to 1024 characters); left out, it is read from stdin when stdin is not a terminal, else generated and printed once',
  },
  workspace: {
    type: 'string',
    description:
      'id or name of the workspace; left out, the only one (an empty database gets a first workspace, named by this option when given)',
  },
  as: {
    type: 'string',
    description: 'operator named in the account-change record (default: the OS user name)',
  },
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
    const operator = operatorOf(values.as);
    const loaded = commandConfig();
    const timeoutMs = recordTimeoutMs(loaded);
    const [password, passwordSource] = await passwordFrom('-password', values.password);
    await withDatabase(loaded, async (database) => {
      const created = await migrateThenChange(database, loaded, createLogger(), (db) =>
        createAdminAccount(db, { email, name, password, workspace: values.workspace }),
      );
      const { user, workspace, workspaceCreated } = created;
      console.log(
        `created admin ${user.email} (${user.id}) in ${workspaceCreated ? 'the new ' : ''}workspace ${describeWorkspace(workspace)}`,
      );
      if (passwordSource === 'generated') console.log(`password: ${password}`);
      await recordChange(
        database.db,
        operator,
        {
          command: 'account:create-admin',
          workspaceId: workspace.id,
          subject: user.email,
          detail: {
            accountId: user.id,
            name: user.name,
            role: user.role,
            workspaceCreated,
            passwordSource,
          },
        },
        timeoutMs,
        `admin ${user.email} was created`,
      );
    });
  },
});
