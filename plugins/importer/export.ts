// Exporting contacts (docs/importer.md "Export"): `exportContacts` judges the filters and
// records the export; its creator downloads the file from the export route, written as it
// is sent from the contacts as they are then, one batch of a server-side cursor at a time.
import { and, eq, lt } from 'drizzle-orm';
import {
  countFilteredContacts,
  exportChannels,
  findService,
  prepareContactFilter,
  readContactsInBatches,
  refuse,
  signedIn,
  type ContactFilterArgs,
  type ContactFilterScope,
  type Context,
  type Db,
  type ExportField,
  type Logger,
  type PluginSweep,
  type PreparedContactFilter,
} from '../../src/plugin-sdk/index.js';
import { contactCells, csvLine, headerCells } from './export-cells.js';
import { contactExports, type ContactExport } from './tables.js';
import { XLSX_MAX_ROWS, XlsxWriter } from './xlsx-writer.js';

export type ExportFormat = 'csv' | 'xlsx';

/** How long an export's file may be downloaded after it was started. */
export const EXPORT_TTL_MS = 60 * 60 * 1000;
/** Contacts fetched from the cursor per batch (one FETCH, one read of their field values). */
export const EXPORT_BATCH = 1_000;
/** Contacts an .xlsx export holds at most: a sheet's rows, less the header. */
export const XLSX_MAX_CONTACTS = XLSX_MAX_ROWS - 1;

/** The path below the service's origin an export's file is downloaded from. */
export function exportPath(id: string): string {
  return `/api/plugins/importer/exports/${id}/file`;
}

export interface ExportView {
  id: string;
  format: ExportFormat;
  contactCount: number;
  url: string;
  createdAt: Date;
  expiresAt: Date;
}

/** The filter arguments worth keeping: those given, not null. */
function givenFilters(args: ContactFilterArgs): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(args).filter(([, value]) => value !== undefined && value !== null),
  );
}

/**
 * `exportContacts`: the filters judged now (a refusal answers here, not at the download),
 * the matches counted, and the export recorded for its creator for an hour. An .xlsx of
 * more contacts than a sheet holds is `export_too_large`.
 */
export async function startExport(
  ctx: Context,
  format: ExportFormat,
  args: ContactFilterArgs,
): Promise<ExportView> {
  const scope = signedIn(ctx);
  const filters = givenFilters(args);
  const prepared = await prepareContactFilter(scope, filters);
  const contactCount = await countFilteredContacts(ctx.database.db, prepared);
  if (format === 'xlsx' && contactCount > XLSX_MAX_CONTACTS) {
    throw refuse('export_too_large', { max: XLSX_MAX_CONTACTS, contacts: contactCount });
  }
  const [row] = await ctx.database.db
    .insert(contactExports)
    .values({
      workspaceId: scope.workspaceId,
      format,
      filters,
      createdBy: scope.actor.userId,
      expiresAt: new Date(Date.now() + EXPORT_TTL_MS),
    })
    .returning();
  return { ...viewOf(row!), contactCount };
}

function viewOf(row: ContactExport): Omit<ExportView, 'contactCount'> {
  return {
    id: row.id,
    format: row.format as ExportFormat,
    url: exportPath(row.id),
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
  };
}

/**
 * The caller's own export of this id, while it may be downloaded; null for another
 * workspace's, another user's, an expired one or none.
 */
export async function findOwnExport(
  db: Db,
  workspaceId: string,
  userId: string,
  id: string,
): Promise<ContactExport | null> {
  const [row] = await db
    .select()
    .from(contactExports)
    .where(and(eq(contactExports.workspaceId, workspaceId), eq(contactExports.id, id)));
  if (!row || row.createdBy !== userId || row.expiresAt.getTime() <= Date.now()) return null;
  return row;
}

/** What the file is made of: the filters compiled, the channels and the fields. */
export interface ExportPlan {
  format: ExportFormat;
  prepared: PreparedContactFilter;
  channels: string[];
  fields: readonly ExportField[];
}

/** The export's plan for the download; the filters' refusal if they no longer hold. */
export async function planExport(
  scope: ContactFilterScope,
  row: ContactExport,
): Promise<ExportPlan> {
  const prepared = await prepareContactFilter(scope, row.filters as ContactFilterArgs);
  const service = findService('fields');
  const fields = (await service?.exportFields?.(scope, scope.workspaceId)) ?? [];
  return {
    format: row.format as ExportFormat,
    prepared,
    channels: await exportChannels(scope.database.db, scope.workspaceId),
    fields,
  };
}

/**
 * The file's bytes as a stream: the producer runs a batch ahead of the reader at most (its
 * writes wait while the queue holds two chunks), so a slow client holds the cursor still,
 * not rows in memory. A client that goes away cancels the stream, which ends the producer
 * and rolls its transaction back.
 */
export function exportStream(db: Db, plan: ExportPlan, log: Logger): ReadableStream<Uint8Array> {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
    undefined,
    new CountQueuingStrategy({ highWaterMark: 1 }),
    new CountQueuingStrategy({ highWaterMark: 1 }),
  );
  const writer = writable.getWriter();
  const write = async (chunk: Uint8Array) => {
    await writer.ready;
    await writer.write(chunk);
  };
  produce(db, plan, write)
    .then(
      () => writer.close(),
      (error: unknown) => {
        log.warn({ err: error }, 'contact export ended early');
        return writer.abort(error);
      },
    )
    .catch(() => {
      // The reader went away first: nothing is left to tell.
    });
  return readable;
}

const encoder = new TextEncoder();

async function produce(
  db: Db,
  plan: ExportPlan,
  write: (chunk: Uint8Array) => Promise<void>,
): Promise<void> {
  const { channels, fields } = plan;
  const header = headerCells(
    channels,
    fields.map((field) => field.name),
  );
  const service = findService('fields');
  const readCells = fields.length > 0 ? service?.readCells : undefined;
  const xlsx = plan.format === 'xlsx' ? new XlsxWriter() : null;
  // A BOM, so a spreadsheet opening the CSV reads it as UTF-8.
  if (xlsx) for (const chunk of xlsx.add([header])) await write(chunk);
  else await write(encoder.encode(`\ufeff${csvLine(header)}`));

  await readContactsInBatches(db, plan.prepared, EXPORT_BATCH, async (tx, batch) => {
    const cells = readCells
      ? await readCells(tx, {
          workspaceId: plan.prepared.workspaceId,
          fields,
          contactIds: batch.map((contact) => contact.id),
        })
      : null;
    const none = fields.map(() => '');
    const rows = batch.map((contact) =>
      contactCells(contact, channels, cells?.get(contact.id) ?? none),
    );
    if (xlsx) {
      // Contacts added since the start may pass the sheet's rows: end short, not corrupt.
      if (xlsx.rows + rows.length > XLSX_MAX_ROWS) throw new Error('export passed a sheet’s rows');
      for (const chunk of xlsx.add(rows)) await write(chunk);
    } else {
      await write(encoder.encode(rows.map(csvLine).join('')));
    }
  });
  if (xlsx) for (const chunk of xlsx.end()) await write(chunk);
}

/** Exports past their hour: deleted by housekeeping. */
export const exportSweep: PluginSweep = {
  name: 'expired contact exports',
  async run(db) {
    const gone = await db
      .delete(contactExports)
      .where(lt(contactExports.expiresAt, new Date()))
      .returning({ id: contactExports.id });
    return gone.length;
  },
};
