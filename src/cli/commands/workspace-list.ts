import { defineCommand, type ArgsDef } from 'citty';
import { listWorkspaceSummaries } from '../../workspaces/service.js';
import { withDatabase } from '../account-commands.js';
import { commandConfig } from '../config.js';
import { checkOptions, formatTable, when } from '../options.js';

const args = {} as const satisfies ArgsDef;

export default defineCommand({
  meta: {
    name: 'workspace:list',
    description:
      'Every workspace, oldest first: id, name, status, account and contact counts (changes nothing)',
  },
  args,
  async run({ rawArgs }) {
    checkOptions(rawArgs, args);
    await withDatabase(commandConfig(), async (database) => {
      const rows = await listWorkspaceSummaries(database.db);
      if (rows.length === 0) {
        console.error('no workspaces; svc workspace:create makes one');
        return;
      }
      console.log(
        formatTable(
          ['ID', 'NAME', 'STATUS', 'ACCOUNTS', 'CONTACTS'],
          rows.map(({ workspace, accounts, contacts }) => [
            workspace.id,
            workspace.name,
            workspace.deactivatedAt
              ? `deactivated since ${when(workspace.deactivatedAt)}`
              : 'active',
            String(accounts),
            String(contacts),
          ]),
        ),
      );
    });
  },
});
