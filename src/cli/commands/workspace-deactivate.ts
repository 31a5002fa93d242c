import { defineCommand, type ArgsDef } from 'citty';
import { setWorkspaceDeactivated } from '../../workspaces/service.js';
import { asArg, recordChange, startAccountCommand, withDatabase } from '../account-commands.js';
import { describeWorkspace, requireNamedWorkspace } from '../accounts.js';
import { problemsStoppingPluginCommands, stopOn } from '../config.js';
import { CommandError } from '../errors.js';
import { checkOptions, when } from '../options.js';

const args = {
  workspace: { type: 'string', required: true, description: 'id or name of the workspace' },
  as: asArg,
} as const satisfies ArgsDef;

type Change = 'deactivate' | 'reactivate';

/** Shared by workspace:deactivate and workspace:reactivate. */
export function workspaceStatusCommand(change: Change) {
  const command = `workspace:${change}`;
  return defineCommand({
    meta: {
      name: command,
      description:
        change === 'deactivate'
          ? 'Deactivate a workspace: its sessions and tokens stop answering at once; its data stays'
          : 'Reactivate a deactivated workspace: its sessions and tokens answer again',
    },
    args,
    async run({ args: values, rawArgs }) {
      checkOptions(rawArgs, args);
      const { operator, loaded, timeoutMs } = startAccountCommand(values.as);
      stopOn(problemsStoppingPluginCommands(loaded.problems));
      await withDatabase(loaded, async (database) => {
        const found = await requireNamedWorkspace(database.db, values.workspace);
        const deactivated = found.deactivatedAt !== null;
        if (change === 'deactivate' && deactivated) {
          throw new CommandError(
            `-workspace: workspace ${describeWorkspace(found)} is already deactivated (since ${when(found.deactivatedAt)})`,
          );
        }
        if (change === 'reactivate' && !deactivated) {
          throw new CommandError(
            `-workspace: workspace ${describeWorkspace(found)} is active; nothing to reactivate`,
          );
        }
        const updated = await setWorkspaceDeactivated(
          database.db,
          found.id,
          change === 'deactivate' ? new Date() : null,
        );
        if (!updated) {
          throw new CommandError(`-workspace: workspace ${describeWorkspace(found)} is gone`);
        }
        const done = change === 'deactivate' ? 'deactivated' : 'reactivated';
        console.log(`${done} workspace ${describeWorkspace(updated)}`);
        await recordChange(
          database.db,
          operator,
          {
            command,
            workspaceId: updated.id,
            subject: null,
            detail: {
              workspaceName: updated.name,
              ...(change === 'deactivate'
                ? { deactivatedAt: updated.deactivatedAt?.toISOString() }
                : { deactivatedSince: found.deactivatedAt?.toISOString() }),
            },
          },
          timeoutMs,
          `workspace ${describeWorkspace(updated)} was ${done}`,
        );
      });
    },
  });
}

export default workspaceStatusCommand('deactivate');
