import { defineCommand, type ArgsDef } from 'citty';
import { createLogger } from '../../log.js';
import { DatabaseNotEmpty, seedDemo } from '../../seed/index.js';
import {
  generatePassword,
  migrateThenChange,
  operatorOf,
  recordChange,
  recordTimeoutMs,
  withDatabase,
} from '../account-commands.js';
import { describeWorkspace, inTransaction } from '../accounts.js';
import { commandConfig } from '../config.js';
import { CommandError, UsageError } from '../errors.js';
import { checkOptions } from '../options.js';

const args = {
  yes: {
    type: 'boolean',
    description: 'confirm writing demo data (a workspace, an admin and a member) to the database',
  },
  as: {
    type: 'string',
    description: 'operator named in the account-change record (default: the OS user name)',
  },
} as const satisfies ArgsDef;

export default defineCommand({
  meta: {
    name: 'seed',
    description:
      'Fill an empty database with demo data for a first look (migrating the core first); refuses a database holding any workspace',
  },
  args,
  async run({ args: values, rawArgs }) {
    checkOptions(rawArgs, args);
    if (!values.yes) {
      throw new UsageError(
        'seed writes demo data (a workspace, an admin and a member with printed passwords) to the database SVC_DATABASE_URL names; run it with -yes to go ahead',
      );
    }
    const operator = operatorOf(values.as);
    const loaded = commandConfig();
    const timeoutMs = recordTimeoutMs(loaded);
    const passwords = { admin: generatePassword(), member: generatePassword() };
    await withDatabase(loaded, async (database) => {
      const seeded = await migrateThenChange(database, loaded, createLogger(), (db) =>
        inTransaction(db, (tx) => seedDemo(tx, { passwords })).catch((error: unknown) => {
          if (!(error instanceof DatabaseNotEmpty)) throw error;
          throw new CommandError(
            `${error.message}; seed fills only an empty database and changed nothing (add an admin with svc account:create-admin)`,
          );
        }),
      );
      const { workspace, admin, member, added } = seeded;
      console.log(`seeded workspace ${describeWorkspace(workspace)}`);
      for (const account of [admin, member]) {
        const { user } = account;
        console.log(`  ${user.role}: ${user.email} (${user.name})  password: ${account.password}`);
      }
      for (const [step, counts] of Object.entries(added)) {
        const summary = Object.entries(counts).map(([what, n]) => `${n} ${what}`);
        console.log(`  ${step}: ${summary.join(', ') || 'nothing'}`);
      }
      console.log('the passwords are shown once; they cannot be printed again');
      await recordChange(
        database.db,
        operator,
        {
          command: 'seed',
          workspaceId: workspace.id,
          subject: [admin.user.email, member.user.email].join(', '),
          detail: {
            workspaceName: workspace.name,
            accounts: [admin.user, member.user].map((user) => ({
              accountId: user.id,
              email: user.email,
              role: user.role,
            })),
            added,
          },
        },
        timeoutMs,
        `the demo data was seeded`,
      );
    });
  },
});
