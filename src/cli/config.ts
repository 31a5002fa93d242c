import {
  loadProcessConfig,
  type Config,
  type ConfigProblem,
  type LoadedConfig,
} from '../config.js';
import {
  formatProblems,
  problemsStoppingPluginCommands,
  problemsStoppingServe,
} from '../config/problems.js';
import { CommandError } from './errors.js';

/** The configuration a command runs with: real environment over `./.env`. */
export function commandConfig(): LoadedConfig {
  return loadProcessConfig(process.cwd());
}

export function stopOn(problems: ConfigProblem[]): void {
  if (problems.length > 0)
    throw new CommandError(`configuration refused:\n${formatProblems(problems)}`);
}

/** `serve` refuses every refused value but the command-record ones (SPEC 8.2). */
export function serveConfig(): Config {
  const { config, problems } = commandConfig();
  stopOn(problemsStoppingServe(problems));
  return config;
}

export const DATABASE_URL_REQUIRED =
  'SVC_DATABASE_URL is required (postgres://user:password@host:port/db)';

export { problemsStoppingPluginCommands };
