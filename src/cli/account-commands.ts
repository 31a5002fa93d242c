import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import type { ConfigProblem, LoadedConfig } from '../config.js';
import { createDatabase, type Database, type Db } from '../db/client.js';
import { applyMigrations, coreMigrations, withMigrationLock } from '../db/migrate.js';
import { createLogger, type Logger } from '../log.js';
import { checkPassword } from '../users/rules.js';
import type { User } from '../users/tables.js';
import type { Workspace } from '../workspaces/tables.js';
import { RecordNotStored, storeAccountRecord, type NewAccountRecord } from '../records/service.js';
import { commandConfig, problemsStoppingPluginCommands, stopOn } from './config.js';
import { commandDatabase, withoutPassword, type CommandDatabase } from './database.js';
import { CommandError, UsageError } from './errors.js';
import { forOption } from './options.js';

// What the account commands (those taking `-as`) share: who the operator is, the
// configuration they stop on, the database, and the account-change record each writes.

const ACTOR_MAX = 200;

export interface Operator {
  actor: string;
  /** True when `-as` was left out and the operating-system user name stands in. */
  fromOsUser: boolean;
}

/** `-as <operator>`, else the operating-system user running the command. */
export function operatorOf(as: string | undefined): Operator {
  if (as !== undefined) {
    const actor = as.trim();
    if (!actor) throw new UsageError('-as needs the name of the operator running the command');
    if ([...actor].length > ACTOR_MAX || /\p{Cc}/u.test(actor)) {
      throw new UsageError(`-as must be a name of at most ${ACTOR_MAX} characters on one line`);
    }
    return { actor, fromOsUser: false };
  }
  let name = '';
  try {
    name = userInfo().username.trim();
  } catch {
    // No passwd entry for this uid (common in containers): the operator must say who they are.
  }
  if (!name) throw new UsageError('-as is required here: the operating-system user has no name');
  return { actor: name, fromOsUser: true };
}

/** `-as`, which every account command takes. */
export const asArg = {
  type: 'string',
  description: 'operator named in the account-change record (default: the OS user name)',
} as const;

/** The password option of a command creating an account; see `passwordFrom`. */
export const newPasswordArg = {
  type: 'string',
  description:
    'sign-in password (12 to 1024 characters); left out, it is read from stdin when stdin is not a terminal, else generated and printed once',
} as const;

function problemsWith(problems: ConfigProblem[], variable: string): ConfigProblem[] {
  return problems.filter((problem) => problem.variable === variable);
}

/**
 * SPEC 8.2: commands with `-as` refuse a non-duration SVC_COMMAND_RECORD_TIMEOUT before
 * changing anything. Answers the time one record may take to store.
 */
export function recordTimeoutMs({ config, problems }: LoadedConfig): number {
  stopOn(problemsWith(problems, 'SVC_COMMAND_RECORD_TIMEOUT'));
  return config.commands.recordTimeoutMs;
}

export interface AccountCommandStart {
  operator: Operator;
  loaded: LoadedConfig;
  timeoutMs: number;
}

/**
 * What an account command settles before it touches the database, in the order its
 * refusals are reported: the operator, then the configuration's record timeout.
 */
export function startAccountCommand(as: string | undefined): AccountCommandStart {
  const operator = operatorOf(as);
  const loaded = commandConfig();
  return { operator, loaded, timeoutMs: recordTimeoutMs(loaded) };
}

/** Stops on a refused command-record variable unless its option was given instead. */
export function stopOnVariable(loaded: LoadedConfig, variable: string): void {
  stopOn(problemsWith(loaded.problems, variable));
}

const UNDEFINED_TABLE = '42P01';

/**
 * Runs a command's database work (on the database `commandDatabase` picks) and closes
 * the pool, stopping the embedded cluster when the command started it. A database svc
 * never migrated is told apart from other failures, since the commands that do not
 * migrate meet it first.
 */
export async function withDatabase<T>(
  loaded: LoadedConfig,
  work: (database: Database, source: CommandDatabase) => Promise<T>,
): Promise<T> {
  const source = await commandDatabase(loaded);
  try {
    const database = createDatabase(source.url, { max: 3 });
    try {
      return await work(database, source);
    } finally {
      await database.close();
    }
  } catch (error) {
    const code =
      (error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code;
    if (code === UNDEFINED_TABLE) {
      throw new CommandError(
        `the database ${withoutPassword(source.url)} has no svc tables yet; run svc migrate first`,
      );
    }
    throw error;
  } finally {
    await source.release();
  }
}

/**
 * SPEC 8.2 for `seed -yes` and `account:create-admin`: under the migration lock, apply
 * the core migrations (accounts, command records and the core), then stop on a refused
 * Mail, Workspaces, Webhooks, Fields, Chat or SVC_SHUTDOWN_STOP_GRACE value, and only then
 * make the change. Holding the lock through the change also keeps two of these commands
 * from both finding an empty database.
 */
export async function migrateThenChange<T>(
  database: Database,
  loaded: LoadedConfig,
  log: Logger,
  change: (db: Db) => Promise<T>,
): Promise<T> {
  return withMigrationLock(database, { log }, async () => {
    await applyMigrations(database, coreMigrations, log);
    stopOn(problemsStoppingPluginCommands(loaded.problems));
    return change(database.db);
  });
}

/**
 * Stores the record of a change already made. When storing fails or outlasts the
 * timeout, the command fails (exit 1) saying the change stays.
 */
export async function recordChange(
  db: Db,
  operator: Operator,
  record: Omit<NewAccountRecord, 'actor'>,
  timeoutMs: number,
  change: string,
): Promise<void> {
  const detail = operator.fromOsUser ? { ...record.detail, actorFrom: 'os-user' } : record.detail;
  try {
    await storeAccountRecord(db, { ...record, actor: operator.actor, detail }, timeoutMs);
  } catch (error) {
    if (!(error instanceof RecordNotStored)) throw error;
    const why =
      error.why === 'timeout'
        ? `was not stored within ${timeoutMs}ms (SVC_COMMAND_RECORD_TIMEOUT)`
        : `could not be stored (${error.message})`;
    throw new CommandError(`${change}, but its account-change record ${why}; the change stays`);
  }
}

/** A sign-in password for an account nobody chose one for: 144 random bits, 24 characters. */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}

const STDIN_MAX_BYTES = 64 * 1024;

/**
 * The password piped on stdin (its trailing line break dropped), or null when stdin is
 * a terminal or closes with nothing written (`</dev/null`).
 */
export async function passwordFromStdin(): Promise<string | null> {
  if (process.stdin.isTTY) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > STDIN_MAX_BYTES) throw new CommandError('stdin: more than 64 KiB for a password');
    chunks.push(chunk);
  }
  if (size === 0) return null;
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

export type PasswordSource = 'option' | 'stdin' | 'generated';

/**
 * A new account's password: the option as given, else stdin when it is not a terminal,
 * else generated (the caller prints it once). A refused password names `option`.
 */
export async function passwordFrom(
  option: string,
  given: string | undefined,
): Promise<[string, PasswordSource]> {
  if (given !== undefined) return [forOption(option, () => checkPassword(given)), 'option'];
  const piped = await passwordFromStdin();
  if (piped !== null) return [forOption('stdin password', () => checkPassword(piped)), 'stdin'];
  return [generatePassword(), 'generated'];
}

/** What a command creating an admin says about the account and puts in its record. */
export interface AdminReport {
  /** The line on stdout naming the new account. */
  said: string;
  command: string;
  /** Record detail beyond the account's own (id, name, role, password source). */
  detail: Record<string, unknown>;
  /** The change, for the failure that says it stays when its record is not stored. */
  change: string;
}

/**
 * The run `account:create-admin` and `workspace:create` share once their own options are
 * read: `-as` and the configuration (`startAccountCommand`), the password (`passwordFrom`),
 * `create` under `migrateThenChange`, the report with a generated password printed once,
 * and the account-change record.
 */
export async function createAdminAndRecord<T extends { user: User; workspace: Workspace }>(
  as: string | undefined,
  passwordOption: [option: string, given: string | undefined],
  create: (db: Db, password: string) => Promise<T>,
  report: (created: T) => AdminReport,
): Promise<void> {
  const { operator, loaded, timeoutMs } = startAccountCommand(as);
  const [password, passwordSource] = await passwordFrom(...passwordOption);
  await withDatabase(loaded, async (database) => {
    const created = await migrateThenChange(database, loaded, createLogger(), (db) =>
      create(db, password),
    );
    const { user, workspace } = created;
    const { said, command, detail, change } = report(created);
    console.log(said);
    if (passwordSource === 'generated') console.log(`password: ${password}`);
    const account = { accountId: user.id, name: user.name, role: user.role, passwordSource };
    await recordChange(
      database.db,
      operator,
      {
        command,
        workspaceId: workspace.id,
        subject: user.email,
        detail: { ...detail, ...account },
      },
      timeoutMs,
      change,
    );
  });
}
