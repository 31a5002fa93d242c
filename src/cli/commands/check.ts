import { defineCommand } from 'citty';
import { formatProblems } from '../../config.js';
import { commandConfig } from '../config.js';
import { CommandError } from '../errors.js';

export default defineCommand({
  meta: { name: 'check', description: 'Validate configuration without connecting to the database' },
  run() {
    const { problems } = commandConfig();
    if (problems.length > 0)
      throw new CommandError(`configuration refused:\n${formatProblems(problems)}`);
    console.log('configuration is valid');
  },
});
