// The importer's graph (SPEC 4.2, the Imports row): importUpload over multipart, imports
// and importJob with their staged rows.
import {
  builder,
  contactFilterArguments,
  contactFilterCost,
  costs,
  FILTER_COUNT,
  limited,
  SEARCH,
  STATEMENT,
  TEXT_MAX,
  WRITE,
} from '../../src/plugin-sdk/index.js';
import { commitImport, importTargets, setMapping, type ImportTarget } from './commit.js';
import { startExport, type ExportView } from './export.js';
import { FILE_MAX_BYTES, findImport, importRowsOf, listImports, uploadImport } from './service.js';
import type { ImportView, ProgressView } from './progress.js';
import type { ImportRow, RowReason } from './tables.js';

const readImports = { access: { scope: 'imports:read' } } as const;
const writeImports = { access: { scope: 'imports:write' } } as const;
// An export reads contacts: a token needs contacts:read beside imports:read.
const exportContactsScopes = {
  access: { scope: 'imports:read', alsoScope: 'contacts:read' },
} as const;
// Committing writes contacts: a token needs imports:write; the contacts follow from it.
const writeImportsAndContacts = writeImports;

const ImportReasonObject = builder.objectRef<NonNullable<RowReason>>('ImportReason').implement({
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
      // A reason stored before reasons were codes is text: it reads as legacy_text.
      resolve: (row) =>
        typeof row.reason === 'string'
          ? { code: 'legacy_text' as const, meta: { text: row.reason } }
          : (row.reason ?? null),
    }),
    contactId: t.expose('contactId', {
      type: 'UUID',
      nullable: true,
      description:
        'The contact holding the row’s address (identity_taken_by), the one it created, or ' +
        'the one it merges (merged) into; before the commit, a merge into a contact an ' +
        'earlier row creates reads null.',
    }),
    outcome: t.exposeString('outcome', {
      nullable: true,
      description:
        'What the commit will do with the row, `create`, `merge` (into the contact holding ' +
        'its address, `existingContacts: MERGE`) or `skip`, set by the mapping; once ' +
        'committed, what it did: `created`, `merged` or `skipped`. Null before a mapping ' +
        '(docs/importer.md).',
    }),
  }),
});

const ExistingContactsEnum = builder.enumType('ImporterExistingContacts', {
  description: 'What a row holding an address an existing contact holds does (docs/importer.md).',
  values: {
    SKIP: {
      value: 'skip',
      description: 'Left out as `identity_taken_by` (SPEC 2.10), the default.',
    },
    MERGE: {
      value: 'merge',
      description:
        'Merged into that contact: the row’s other addresses nobody holds are added, its ' +
        'field values fill the fields the contact has no value in; a row whose addresses ' +
        'lead to two contacts is left out as `identity_taken_by_several`.',
    },
  } as const,
});

const ImportFieldObject = builder.objectRef<ImportTarget>('ImportField').implement({
  description: 'What a column may be mapped to: the name, a kind of address, a custom field.',
  fields: (t) => ({
    key: t.exposeString('key', { description: '`name`, `identity:email`, `field:<name>`.' }),
    label: t.exposeString('label'),
    kind: t.exposeString('kind', { description: '`name`, `identity` or the field’s kind.' }),
  }),
});

const ImportColumnInput = builder.inputType('ImportColumnInput', {
  fields: (t) => ({
    column: t.int({ description: 'The column’s index in `columns`, from 0.' }),
    target: t.string({ extensions: limited({ maxLength: 100 }) }),
  }),
});

const ImportProgressObject = builder.objectRef<ProgressView>('ImportProgress').implement({
  description: 'The work running on an import: rows done of rows, for a progress bar.',
  fields: (t) => ({
    stage: t.exposeString('stage', { description: '`staging` or `committing`.' }),
    done: t.exposeInt('done'),
    total: t.exposeInt('total'),
  }),
});

export const ImportObject = builder.objectRef<ImportView>('Import').implement({
  description: 'An uploaded file of contacts and where it stands (docs/importer.md).',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    fileName: t.exposeString('fileName'),
    format: t.exposeString('format', { description: 'csv, xlsx, xls or ods.' }),
    state: t.exposeString('state', {
      description: 'staging, staged, mapped, committing, committed or failed (docs/importer.md).',
    }),
    progress: t.expose('progress', {
      type: ImportProgressObject,
      nullable: true,
      description: 'While the rows are staged or committed: how far the work is; else null.',
    }),
    columns: t.exposeStringList('columns', { description: "The header row's cells." }),
    rowCount: t.exposeInt('rowCount'),
    mapping: t.field({
      type: ['String'],
      nullable: { list: true, items: true },
      description: 'Each column’s target key, or null; null until mapped.',
      resolve: (job) => job.mapping ?? null,
    }),
    existingContacts: t.field({
      type: ExistingContactsEnum,
      description: 'What rows holding an existing contact’s address do, as last mapped.',
      resolve: (job) => (job.existingContacts === 'merge' ? 'merge' : 'skip'),
    }),
    createdCount: t.exposeInt('createdCount', { nullable: true }),
    mergedCount: t.exposeInt('mergedCount', {
      nullable: true,
      description: 'Rows the commit merged into existing contacts (null before a commit).',
    }),
    skippedCount: t.exposeInt('skippedCount', { nullable: true }),
    committedAt: t.expose('committedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    rows: t.field({
      type: [ImportRowObject],
      description:
        'Staged rows in file order; `reason` keeps the rows with that code ("" keeps the ' +
        'rows without one), `outcome` those with that outcome.',
      args: {
        first: t.arg.int({ required: false }),
        afterLine: t.arg.int({ required: false }),
        reason: t.arg.string({
          required: false,
          extensions: limited({ maxLength: TEXT_MAX.word }),
        }),
        outcome: t.arg.string({
          required: false,
          extensions: limited({ maxLength: TEXT_MAX.word }),
        }),
      },
      extensions: costs({ cost: STATEMENT }),
      resolve: (job, args, ctx) => importRowsOf(ctx, job, args),
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
  importFields: t.field({
    type: [ImportFieldObject],
    description:
      'What columns may be mapped to: the name, each kind of address, every live custom field.',
    authScopes: readImports,
    resolve: (_root, _args, ctx) => importTargets(ctx),
  }),
}));

builder.mutationFields((t) => ({
  importUpload: t.field({
    type: ImportObject,
    description:
      'Uploads a CSV or spreadsheet (at most 5 MiB) as a multipart request and stages ' +
      'its rows, each with its reason.',
    authScopes: writeImports,
    args: {
      file: t.arg({
        type: 'Upload',
        required: true,
        // A request that can't hold a file this small is refused before its body is read.
        extensions: limited({ maxBytes: FILE_MAX_BYTES, tooLarge: 'file_too_large' }),
      }),
    },
    // Reading the file is CPU on a worker process, as costly as a search.
    extensions: costs({ cost: WRITE + SEARCH }),
    resolve: (_root, args, ctx) => uploadImport(ctx, args.file),
  }),
  importSetMapping: t.field({
    type: ImportObject,
    description:
      'Maps columns to targets, says what rows holding an existing contact’s address do, ' +
      'and judges every row by them.',
    authScopes: writeImports,
    args: {
      id: t.arg({ type: 'UUID', required: true }),
      mapping: t.arg({
        type: [ImportColumnInput],
        required: true,
        extensions: limited({ maxItems: 200 }),
      }),
      existingContacts: t.arg({
        type: ExistingContactsEnum,
        required: false,
        defaultValue: 'skip',
      }),
    },
    // Every row is read and judged, and the workspace's addresses checked: a search's worth.
    extensions: costs({ cost: WRITE + SEARCH }),
    resolve: (_root, args, ctx) =>
      setMapping(ctx, args.id, args.mapping, args.existingContacts ?? 'skip'),
  }),
  importCommit: t.field({
    type: ImportObject,
    description:
      'Creates the contacts of every importable row, and merges the merging ones, once, in ' +
      'one transaction.',
    authScopes: writeImportsAndContacts,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    extensions: costs({ cost: WRITE + SEARCH }),
    resolve: (_root, args, ctx) => commitImport(ctx, args.id),
  }),
}));

const ExportFormatEnum = builder.enumType('ImporterExportFormat', {
  values: {
    CSV: { description: 'UTF-8 with a BOM, comma separated, every cell quoted.' },
    XLSX: { description: 'One sheet, every cell a string.' },
  } as const,
});

const ContactExportObject = builder.objectRef<ExportView>('ImporterContactExport').implement({
  description:
    'An export of contacts its creator downloads from `url` for an hour; the file is ' +
    'written as it is sent, from the contacts as they are then (docs/importer.md "Export").',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    format: t.field({
      type: ExportFormatEnum,
      resolve: (view) => (view.format === 'xlsx' ? 'XLSX' : 'CSV'),
    }),
    contactCount: t.exposeInt('contactCount', {
      description: 'The contacts the filters matched when the export started.',
    }),
    url: t.exposeString('url', {
      description:
        "The file's path on this service: GET it with the same session or token (one " +
        'holding imports:read and contacts:read).',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

builder.mutationFields((t) => ({
  exportContacts: t.field({
    type: ContactExportObject,
    description:
      'Starts an export of the contacts `contactPage` would list with the same filters, ' +
      'one row per contact by name A to Z: the name, a column per identity channel and ' +
      'one per live custom field (docs/importer.md "Export").',
    authScopes: exportContactsScopes,
    args: {
      format: t.arg({ type: ExportFormatEnum, required: true }),
      ...contactFilterArguments(t.arg),
    },
    // The export's row, and a count of the matches (the stored count when unfiltered).
    extensions: costs({
      cost: (args) => {
        const filters = contactFilterCost(args);
        return WRITE + filters + (filters > 0 ? FILTER_COUNT : STATEMENT);
      },
    }),
    resolve: (_root, { format, ...filters }, ctx) =>
      startExport(ctx, format === 'XLSX' ? 'xlsx' : 'csv', filters),
  }),
}));
