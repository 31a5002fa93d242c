// Imports: an uploaded file read on a worker thread and staged row by row with its
// reason (SPEC 2.10), then listed and paged.
import { and, asc, desc, eq, gt, lt, or, sql } from 'drizzle-orm';
import {
  pageSize,
  recordEvent,
  refuse,
  runInWorker,
  signedIn,
  WorkerLimitError,
  type Context,
  type UploadedFile,
} from '../../src/plugin-sdk/index.js';
import { importRows, imports, type Import, type ImportRow } from './tables.js';

/** SPEC 2.10: the file may not exceed 5 MiB. */
export const FILE_MAX_BYTES = 5 * 1024 * 1024;

/** What the parser holds a file to (docs/importer.md). */
export const PARSE_LIMITS = { maxColumns: 200, maxCellChars: 10_000, maxRows: 200_000 };
/** The worker's own heap and time: a hostile file stops there. */
const WORKER_LIMITS = { maxMemoryMb: 256, timeoutMs: 20_000 };
/** Rows written per statement while staging. */
const STAGE_BATCH = 2_000;

const PARSER = new URL('./parse.worker.mjs', import.meta.url);

interface Parsed {
  ok: boolean;
  problem?: string;
  format: string;
  columns: string[];
  rows: { line: number; cells: string[]; reason: ImportRow['reason'] }[];
}

/** `importUpload`: the file read off the request thread, then every row staged. */
export async function uploadImport(ctx: Context, file: UploadedFile): Promise<Import> {
  const { workspaceId, actor } = signedIn(ctx);
  if (file.size > FILE_MAX_BYTES) throw refuse('file_too_large', { maxBytes: FILE_MAX_BYTES });
  const bytes = new Uint8Array(await file.arrayBuffer());
  let parsed: Parsed;
  try {
    parsed = await runInWorker<Parsed>(PARSER, { bytes, limits: PARSE_LIMITS }, WORKER_LIMITS);
  } catch (error) {
    if (!(error instanceof WorkerLimitError)) throw error;
    ctx.log.info({ failure: error.failure }, 'import file refused by the parser limits');
    throw refuse('file_unreadable', {}, { message: 'the file is too large or complex to read' });
  }
  if (!parsed.ok)
    throw refuse('file_unreadable', {}, { message: `file unreadable: ${parsed.problem}` });
  const fileName = (file.name || 'upload').slice(0, 255);
  return ctx.database.db.transaction(async (tx) => {
    const [created] = await tx
      .insert(imports)
      .values({
        workspaceId,
        fileName,
        format: parsed.format,
        state: 'staged',
        columns: parsed.columns,
        rowCount: parsed.rows.length,
        createdBy: actor.userId,
      })
      .returning();
    const staged = created!;
    for (let i = 0; i < parsed.rows.length; i += STAGE_BATCH) {
      await tx.insert(importRows).values(
        parsed.rows.slice(i, i + STAGE_BATCH).map((row) => ({
          workspaceId,
          importId: staged.id,
          line: row.line,
          cells: row.cells,
          reason: row.reason,
        })),
      );
    }
    await recordEvent(tx, {
      workspaceId,
      name: 'import.staged',
      subjectId: staged.id,
      actorUserId: actor.userId,
      data: { rows: staged.rowCount },
    });
    return staged;
  });
}

/** `importJob(id)`: another workspace's id answers as a made-up one. */
export async function findImport(ctx: Context, id: string): Promise<Import> {
  const { workspaceId } = signedIn(ctx);
  const [found] = await ctx.database.db
    .select()
    .from(imports)
    .where(and(eq(imports.workspaceId, workspaceId), eq(imports.id, id)));
  if (!found) throw refuse('import_not_found');
  return found;
}

/** `imports(first, before)`: the workspace's imports, newest first. */
export async function listImports(
  ctx: Context,
  args: { first?: number | null; before?: string | null },
): Promise<Import[]> {
  const { workspaceId } = signedIn(ctx);
  const limit = pageSize(args.first, ctx.config);
  const before = args.before ? await findImport(ctx, args.before) : null;
  return ctx.database.db
    .select()
    .from(imports)
    .where(
      and(
        eq(imports.workspaceId, workspaceId),
        before
          ? or(
              lt(imports.createdAt, before.createdAt),
              and(eq(imports.createdAt, before.createdAt), lt(imports.id, before.id)),
            )
          : undefined,
      ),
    )
    .orderBy(desc(imports.createdAt), desc(imports.id))
    .limit(limit);
}

/** `Import.rows(first, afterLine, reason)`: rows in file order, by reason code if asked. */
export async function importRowsOf(
  ctx: Context,
  importId: string,
  args: { first?: number | null; afterLine?: number | null; reason?: string | null },
): Promise<ImportRow[]> {
  const { workspaceId } = signedIn(ctx);
  const limit = pageSize(args.first, ctx.config);
  const reason =
    args.reason === undefined || args.reason === null
      ? undefined
      : args.reason === ''
        ? sql`${importRows.reason} is null`
        : sql`${importRows.reason}->>'code' = ${args.reason}`;
  return ctx.database.db
    .select()
    .from(importRows)
    .where(
      and(
        eq(importRows.workspaceId, workspaceId),
        eq(importRows.importId, importId),
        args.afterLine != null ? gt(importRows.line, args.afterLine) : undefined,
        reason,
      ),
    )
    .orderBy(asc(importRows.line))
    .limit(limit);
}
