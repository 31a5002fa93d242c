import {
  formatProblems,
  loadProcessConfig,
  problemsStoppingPluginCommands,
  problemsStoppingServe,
  type Config,
  type ConfigProblem,
  type LoadedConfig,
} from '../config.js';
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

/** `serve`'s database: SVC_DATABASE_URL, never the embedded one (see ./database.ts). */
export function databaseUrlOf(config: Config): string {
  if (!config.server.databaseUrl) throw new CommandError(DATABASE_URL_REQUIRED);
  return config.server.databaseUrl;
}

export { problemsStoppingPluginCommands };
