import { defineCommand, type ArgsDef } from 'citty';
import { listAccountRecords } from '../../records/service.js';
import { stopOnVariable, withDatabase } from '../account-commands.js';
import { commandConfig } from '../config.js';
import { UsageError } from '../errors.js';
import { checkOptions, formatTable, plainWholeNumber, when } from '../options.js';

const args = {
  limit: {
    type: 'string',
    description: 'how many records to list, newest first; default SVC_COMMAND_RECORDS_LIMIT (50)',
  },
} as const satisfies ArgsDef;

function limitOf(text: string): number {
  const limit = plainWholeNumber(text.trim());
  if (limit === null || limit < 1) {
    throw new UsageError(`-limit takes a whole number above zero (got "${text}")`);
  }
  return limit;
}

export default defineCommand({
  meta: {
    name: 'account:records',
    description: 'The newest account-change records: who ran which account command, on what',
  },
  args,
  async run({ args: values, rawArgs }) {
    checkOptions(rawArgs, args);
    const loaded = commandConfig();
    let limit: number;
    if (values.limit !== undefined) limit = limitOf(values.limit);
    else {
      stopOnVariable(loaded, 'SVC_COMMAND_RECORDS_LIMIT');
      limit = loaded.config.commands.recordsLimit;
    }
    await withDatabase(loaded, async (database) => {
      const records = await listAccountRecords(database.db, limit);
      if (records.length === 0) {
        console.error('no account-change records');
        return;
      }
      console.log(
        formatTable(
          ['AT', 'ACTOR', 'COMMAND', 'WORKSPACE', 'SUBJECT', 'DETAIL'],
          records.map((record) => [
            when(record.at),
            record.actor,
            record.command,
            record.workspaceId ?? '-',
            record.subject ?? '-',
            JSON.stringify(record.detail),
          ]),
        ),
      );
    });
  },
});
