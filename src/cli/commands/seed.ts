import { defineCommand, type ArgsDef } from 'citty';
import { buildCatalogue } from '../../auth/access.js';
import { createLogger } from '../../log.js';
import { DatabaseNotEmpty, DemoAlreadySeeded, seedDemo } from '../../seed/index.js';
import {
  asArg,
  generatePassword,
  migrateThenChange,
  recordChange,
  startAccountCommand,
  withDatabase,
} from '../account-commands.js';
import { describeWorkspace, inTransaction } from '../accounts.js';
import { CommandError, UsageError } from '../errors.js';
import { checkOptions } from '../options.js';
import { commandContext } from '../service-context.js';

const args = {
  yes: {
    type: 'boolean',
    description:
      'confirm writing the demo workspace (an admin, a member, contacts and tasks) to the database',
  },
  as: asArg,
} as const satisfies ArgsDef;

/** The seed's refusals, saying that nothing changed and what to do instead. */
function refusal(error: unknown): unknown {
  if (error instanceof DemoAlreadySeeded) {
    return new CommandError(`${error.message}; seed runs once per database and changed nothing`);
  }
  if (error instanceof DatabaseNotEmpty) {
    return new CommandError(
      `${error.message}; seed fills only an empty database (or this folder's embedded one) and changed nothing (add an admin with svc account:create-admin)`,
    );
  }
  return error;
}

export default defineCommand({
  meta: {
    name: 'seed',
    description:
      'Add a demo workspace (an admin, a member, a few dozen contacts and tasks over the next weeks) for a first look, migrating the core first; refuses a second run, and any database holding workspaces unless it is the embedded one',
  },
  args,
  async run({ args: values, rawArgs }) {
    checkOptions(rawArgs, args);
    if (!values.yes) {
      throw new UsageError(
        'seed writes a demo workspace (accounts with printed passwords, contacts and tasks) to the database; run it with -yes to go ahead',
      );
    }
    const { operator, loaded, timeoutMs } = startAccountCommand(values.as);
    const passwords = { admin: generatePassword(), member: generatePassword() };
    const log = createLogger();
    await withDatabase(loaded, async (database, source) => {
      const services = { config: loaded.config, database, access: buildCatalogue([]), log };
      const seeded = await migrateThenChange(database, loaded, log, (db) =>
        inTransaction(db, (tx) =>
          seedDemo(tx, {
            passwords,
            besideOthers: source.embedded,
            contextFor: (seedDb, user) => commandContext(services, seedDb, user),
          }),
        ).catch((error: unknown) => {
          throw refusal(error);
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
