import type { ConfigGroup, ConfigProblem } from './types.js';

// Which refused values stop which command (SPEC 8.2), and how they are printed.

/** One problem a line, in the order the variables are read, for `svc check` and startup. */
export function formatProblems(problems: ConfigProblem[]): string {
  return problems.map((problem) => `- ${problem.message}`).join('\n');
}

/** SPEC 8.2: every refused value stops serve, except the three Command records ones. */
export function problemsStoppingServe(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.filter((problem) => problem.group !== 'commands');
}

const PLUGIN_COMMAND_GROUPS: ReadonlySet<ConfigGroup> = new Set([
  'mail',
  'workspaces',
  'webhooks',
  'jobs',
  'fields',
  'chat',
]);

/**
 * SPEC 8.2: problems that stop account commands taking `-as` before they change anything,
 * and `migrate`, `seed -yes`, `account:create-admin` after their migrations: refused
 * values under Mail, Workspaces, Webhooks, Fields plugin, Chat plugin, and
 * SVC_SHUTDOWN_STOP_GRACE (these commands start the plugins).
 */
export function problemsStoppingPluginCommands(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.filter(
    (problem) =>
      PLUGIN_COMMAND_GROUPS.has(problem.group) || problem.variable === 'SVC_SHUTDOWN_STOP_GRACE',
  );
}

/** Problems with the Command records variables, which each command judges for itself. */
export function commandRecordProblems(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.filter((problem) => problem.group === 'commands');
}
