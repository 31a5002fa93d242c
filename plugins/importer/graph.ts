// The importer's graph (SPEC 4.2, the Imports row): importUpload over multipart, imports
// and importJob with their staged rows.
import {
  builder,
  costs,
  limited,
  SEARCH,
  STATEMENT,
  TEXT_MAX,
  WRITE,
} from '../../src/plugin-sdk/index.js';
import { findImport, importRowsOf, listImports, uploadImport } from './service.js';
import type { Import, ImportRow } from './tables.js';

const readImports = { access: { scope: 'imports:read' } } as const;
const writeImports = { access: { scope: 'imports:write' } } as const;

const ImportReasonObject = builder
  .objectRef<NonNullable<ImportRow['reason']>>('ImportReason')
  .implement({
    description: "Why a staged row will not import as it is (SPEC 2.10's codes).",
    fields: (t) => ({
      code: t.exposeString('code'),
      meta: t.field({ type: 'JSON', resolve: (reason) => reason.meta }),
    }),
  });

const ImportRowObject = builder.objectRef<ImportRow>('ImportRow').implement({
  description: 'One row of the file as staged: its cells as read and its reason.',
  fields: (t) => ({
    line: t.exposeInt('line', { description: 'The line of the file the row ends on.' }),
    cells: t.exposeStringList('cells'),
    reason: t.field({
      type: ImportReasonObject,
      nullable: true,
      resolve: (row) => row.reason ?? null,
    }),
  }),
});

export const ImportObject = builder.objectRef<Import>('Import').implement({
  description: 'An uploaded file of contacts and where it stands (docs/importer.md).',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    fileName: t.exposeString('fileName'),
    format: t.exposeString('format', { description: 'csv, xlsx, xls or ods.' }),
    state: t.exposeString('state'),
    columns: t.exposeStringList('columns', { description: "The header row's cells." }),
    rowCount: t.exposeInt('rowCount'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    rows: t.field({
      type: [ImportRowObject],
      description:
        'Staged rows in file order; `reason` keeps the rows with that code ("" keeps the ' +
        'rows without one).',
      args: {
        first: t.arg.int({ required: false }),
        afterLine: t.arg.int({ required: false }),
        reason: t.arg.string({
          required: false,
          extensions: limited({ maxLength: TEXT_MAX.word }),
        }),
      },
      extensions: costs({ cost: STATEMENT }),
      resolve: (job, args, ctx) => importRowsOf(ctx, job.id, args),
    }),
  }),
});

builder.queryFields((t) => ({
  imports: t.field({
    type: [ImportObject],
    description: "The workspace's imports, newest first; `before` pages on from an import.",
    authScopes: readImports,
    args: {
      first: t.arg.int({ required: false }),
      before: t.arg({ type: 'UUID', required: false }),
    },
    resolve: (_root, args, ctx) => listImports(ctx, args),
  }),
  importJob: t.field({
    type: ImportObject,
    description: 'One import of the workspace.',
    authScopes: readImports,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => findImport(ctx, args.id),
  }),
}));

builder.mutationFields((t) => ({
  importUpload: t.field({
    type: ImportObject,
    description:
      'Uploads a CSV or spreadsheet (at most 5 MiB) as a multipart request and stages ' +
      'its rows, each with its reason.',
    authScopes: writeImports,
    args: { file: t.arg({ type: 'Upload', required: true }) },
    // Reading the file is CPU on a worker thread, as costly as a search.
    extensions: costs({ cost: WRITE + SEARCH }),
    resolve: (_root, args, ctx) => uploadImport(ctx, args.file),
  }),
}));
