// Imports: an uploaded file read in a worker process and staged row by row with its
// reason (SPEC 2.10), then listed and paged.
import {
  and,
  asc,
  desc,
  eq,
  getTableColumns,
  gt,
  inArray,
  lt,
  or,
  sql,
  type SQL,
} from 'drizzle-orm';
import {
  pageSize,
  recordEvent,
  refuse,
  signedIn,
  streamInWorker,
  WorkerLimitError,
  type Context,
  type Db,
  type UploadedFile,
} from '../../src/plugin-sdk/index.js';
import { commitRunning, ProgressReport, viewOf, type ImportView } from './progress.js';
import { importProgress, importRows, imports, type Import, type ImportRow } from './tables.js';

/** SPEC 2.10: the file may not exceed 5 MiB. */
export const FILE_MAX_BYTES = 5 * 1024 * 1024;

/**
 * What the parser holds a file to (docs/importer.md), and the rows it puts in each batch:
 * one statement while staging, one step of the progress, all the serving process holds
 * of the file's rows at once.
 */
export const PARSE_LIMITS = {
  maxColumns: 200,
  maxCellChars: 10_000,
  maxRows: 200_000,
  batchRows: 2_000,
  /** A batch is cut before a row that would take it past this (a longer row goes alone). */
  batchChars: 4 * 1024 * 1024,
  /** The rows' JSON text, all batches together: past it the file is refused unread. */
  maxAnswerChars: 64 * 1024 * 1024,
  /** What a spreadsheet's zip may say its parts inflate to, checked before inflating. */
  maxInflatedBytes: 64 * 1024 * 1024,
};
/**
 * The worker's own memory and time, and what it may hand back: a hostile file stops
 * there. Rows come back a batch at a time; all of them are at most 64 MiB (200,000 rows
 * of a few short cells fit many times over), one batch at most 16 MiB (4 MiB of rows, or
 * one row of 200 cells of 10,000 characters however JSON escapes them).
 */
const WORKER_LIMITS = {
  maxMemoryMb: 384,
  timeoutMs: 20_000,
  maxAnswerBytes: 2 * PARSE_LIMITS.maxAnswerChars,
  maxBatchBytes: 16 * 1024 * 1024,
};

const PARSER = new URL('./parse.worker.mjs', import.meta.url);

/** The parser's first answer: what the file is, or why it can't be read. */
interface ParsedFile {
  ok: boolean;
  problem?: string;
  /** The rows' text passes PARSE_LIMITS.maxAnswerChars. */
  tooLarge?: boolean;
  format: string;
  columns: string[];
  rowCount: number;
}

/** What the parser answers: the file first, then each batch of rows as JSON text. */
type ParserAnswer = ParsedFile | string;

const tooComplex = () =>
  refuse('file_unreadable', {}, { message: 'the file is too large or complex to read' });

/** The parser's refusal of its bounds, as `file_unreadable`; anything else as it is. */
function parserRefusal(ctx: Context, error: unknown): unknown {
  if (!(error instanceof WorkerLimitError)) return error;
  ctx.log.info({ failure: error.failure }, 'import file refused by the parser limits');
  return tooComplex();
}

/**
 * `importUpload`: the file read in a worker process, then every row staged as the worker
 * hands it back, a batch at a time.
 */
export async function uploadImport(ctx: Context, file: UploadedFile): Promise<ImportView> {
  signedIn(ctx);
  if (file.size > FILE_MAX_BYTES) throw refuse('file_too_large', { maxBytes: FILE_MAX_BYTES });
  // The file's bytes stream to the worker as the pipe takes them (its `input.bytes`): the
  // serving process holds no copy of the whole file beside the upload's own parts.
  const answers = streamInWorker<ParserAnswer>(
    ctx,
    PARSER,
    { limits: PARSE_LIMITS },
    WORKER_LIMITS,
    { key: 'bytes', file },
  );
  try {
    return await stage(ctx, file, answers);
  } finally {
    // The worker is stopped and its place in the pool freed, however staging ended.
    await answers.return(undefined);
  }
}

/** Creates the import the parser's first answer describes and stages its batches. */
async function stage(
  ctx: Context,
  file: UploadedFile,
  answers: AsyncGenerator<ParserAnswer, void, undefined>,
): Promise<ImportView> {
  const { workspaceId, actor } = signedIn(ctx);
  let parsed: ParsedFile;
  try {
    const first = await answers.next();
    if (first.done || typeof first.value === 'string') throw new WorkerLimitError('crashed');
    parsed = first.value;
  } catch (error) {
    throw parserRefusal(ctx, error);
  }
  if (parsed.tooLarge) throw tooComplex();
  if (!parsed.ok)
    throw refuse('file_unreadable', {}, { message: `file unreadable: ${parsed.problem}` });
  const fileName = (file.name || 'upload').slice(0, 255);
  const { db } = ctx.database;
  // The import is seen (`staging`, with its progress) while its rows are stored.
  const [created] = await db
    .insert(imports)
    .values({
      workspaceId,
      fileName,
      format: parsed.format,
      state: 'staging',
      columns: parsed.columns,
      rowCount: parsed.rowCount,
      createdBy: actor.userId,
    })
    .returning();
  const job = created!;
  const progress = await ProgressReport.start(db, job, 'staging', parsed.rowCount);
  try {
    const staged = await db.transaction(async (tx) => {
      await lockImport(tx, workspaceId, job.id);
      let rows = 0;
      // Each batch is asked of the worker only once the last one is stored.
      for await (const batch of answers) {
        if (typeof batch !== 'string') throw new WorkerLimitError('crashed');
        // The worker's JSON goes in as one parameter, read by the database row by row.
        const stored = await tx.execute<{ rows: number }>(sql`
          with stored as (
            insert into import_rows (workspace_id, import_id, line, cells, reason)
            select ${workspaceId}, ${job.id}, row.line, row.cells, row.reason
            from jsonb_to_recordset(${batch}::jsonb) as row(line int, cells jsonb, reason jsonb)
            returning 1
          )
          select count(*)::int as rows from stored`);
        rows += stored[0]!.rows;
        await progress.advance(stored[0]!.rows);
      }
      // The worker said how many rows it read: all of them are stored, or none.
      if (rows !== parsed.rowCount) throw new WorkerLimitError('crashed');
      const [done] = await tx
        .update(imports)
        .set({ state: 'staged' })
        .where(and(eq(imports.workspaceId, workspaceId), eq(imports.id, job.id)))
        .returning();
      await recordEvent(tx, {
        workspaceId,
        name: 'import.staged',
        subjectId: job.id,
        actorUserId: actor.userId,
        data: { rows: job.rowCount },
      });
      return done!;
    });
    return { ...staged, progress: null };
  } catch (error) {
    // Nothing was staged: the import says so (a process that dies here is read the same).
    await db
      .update(imports)
      .set({ state: 'failed' })
      .where(and(eq(imports.workspaceId, workspaceId), eq(imports.id, job.id)))
      .catch((failure: unknown) => ctx.log.warn({ err: failure }, 'import not marked failed'));
    throw parserRefusal(ctx, error);
  } finally {
    await progress
      .end()
      .catch((failure: unknown) => ctx.log.warn({ err: failure }, 'import progress not cleared'));
  }
}

/**
 * Locks the import for the transaction: mappings and commits queue behind each other and
 * behind the staging. No key update, so progress rows referencing it can still be written.
 */
export async function lockImport(tx: Db, workspaceId: string, id: string): Promise<Import> {
  const [job] = await tx
    .select()
    .from(imports)
    .where(and(eq(imports.workspaceId, workspaceId), eq(imports.id, id)))
    .for('no key update');
  if (!job) throw refuse('import_not_found');
  return job;
}

/** Imports of the workspace matching `where`, each with its live progress. */
async function importsWhere(
  ctx: Context,
  where: SQL | undefined,
  limit: number,
): Promise<ImportView[]> {
  const { workspaceId } = signedIn(ctx);
  const found = await ctx.database.db
    .select({
      job: getTableColumns(imports),
      progress: {
        stage: importProgress.stage,
        done: importProgress.done,
        total: importProgress.total,
        startedAt: importProgress.startedAt,
      },
      // Looked up only for an import with a commit's progress (rare): is that commit alive?
      committing: sql<boolean | null>`case when ${importProgress.stage} = 'committing'
        then ${commitRunning(sql`${imports.id}`)} end`,
    })
    .from(imports)
    .leftJoin(
      importProgress,
      and(
        eq(importProgress.workspaceId, imports.workspaceId),
        eq(importProgress.importId, imports.id),
      ),
    )
    .where(and(eq(imports.workspaceId, workspaceId), where))
    .orderBy(desc(imports.createdAt), desc(imports.id))
    .limit(limit);
  const deadline = ctx.config.graph.operationTimeoutMs;
  return found.map(({ job, progress, committing }) => viewOf(job, progress, deadline, committing));
}

/** `importJob(id)`: another workspace's id answers as a made-up one. */
export async function findImport(ctx: Context, id: string): Promise<ImportView> {
  const [found] = await importsWhere(ctx, eq(imports.id, id), 1);
  if (!found) throw refuse('import_not_found');
  return found;
}

/** `imports(first, before)`: the workspace's imports, newest first. */
export async function listImports(
  ctx: Context,
  args: { first?: number | null; before?: string | null },
): Promise<ImportView[]> {
  const limit = pageSize(args.first, ctx.config);
  const before = args.before ? await findImport(ctx, args.before) : null;
  return importsWhere(
    ctx,
    before
      ? or(
          lt(imports.createdAt, before.createdAt),
          and(eq(imports.createdAt, before.createdAt), lt(imports.id, before.id)),
        )
      : undefined,
    limit,
  );
}

/** What a row's stored outcome reads once its import is committed. */
const DONE: Record<string, string> = { create: 'created', merge: 'merged', skip: 'skipped' };

/**
 * A staged row as it reads: a committed import's outcome in the past tense; a contact the
 * commit creates (`contactPlanned`) not named before it is committed.
 */
function rowAsRead(row: ImportRow, committed: boolean): ImportRow {
  if (committed)
    return row.outcome && DONE[row.outcome] ? { ...row, outcome: DONE[row.outcome]! } : row;
  return row.contactPlanned ? { ...row, contactId: null } : row;
}

/** The stored outcomes a row read as `outcome` may hold. */
function storedOutcomes(outcome: string, committed: boolean): string[] {
  if (!committed) return [outcome];
  // Commits before `contactPlanned` stored the past tense itself.
  const present = Object.keys(DONE).find((stored) => DONE[stored] === outcome);
  return present ? [present, outcome] : [];
}

/**
 * `Import.rows(first, afterLine, reason, outcome)`: rows in file order, by reason code or
 * outcome (as read) if asked.
 */
export async function importRowsOf(
  ctx: Context,
  job: Pick<Import, 'id' | 'state'>,
  args: {
    first?: number | null;
    afterLine?: number | null;
    reason?: string | null;
    outcome?: string | null;
  },
): Promise<ImportRow[]> {
  const { workspaceId } = signedIn(ctx);
  const limit = pageSize(args.first, ctx.config);
  const committed = job.state === 'committed';
  const reason =
    args.reason === undefined || args.reason === null
      ? undefined
      : args.reason === ''
        ? sql`${importRows.reason} is null`
        : sql`${importRows.reason}->>'code' = ${args.reason}`;
  const outcomes = args.outcome != null ? storedOutcomes(args.outcome, committed) : null;
  if (outcomes?.length === 0) return [];
  const rows = await ctx.database.db
    .select()
    .from(importRows)
    .where(
      and(
        eq(importRows.workspaceId, workspaceId),
        eq(importRows.importId, job.id),
        args.afterLine != null ? gt(importRows.line, args.afterLine) : undefined,
        reason,
        outcomes ? inArray(importRows.outcome, outcomes) : undefined,
      ),
    )
    .orderBy(asc(importRows.line))
    .limit(limit);
  return rows.map((row) => rowAsRead(row, committed));
}
