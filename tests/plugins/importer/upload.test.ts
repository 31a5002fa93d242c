// The importer's upload (SPEC 2.10, 4.1): real files built here, sent as GraphQL multipart
// requests, read on a worker thread and staged with each row's structural reason.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as XLSX from 'xlsx';
import { dataOf, expectReason, freshWorkspaceHeaders } from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { uploadFile } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

interface StagedImport {
  id: string;
  fileName: string;
  format: string;
  state: string;
  columns: string[];
  rowCount: number;
  rows: { line: number; cells: string[]; reason: { code: string; meta: unknown } | null }[];
}

const upload = (bytes: Uint8Array | string, name?: string, headers?: Record<string, string>) =>
  uploadFile(svc, bytes, name, headers);

async function staged(bytes: Uint8Array | string, name?: string): Promise<StagedImport> {
  return dataOf<StagedImport>((await upload(bytes, name)).body, 'importUpload');
}

const cellsOf = (job: StagedImport) => job.rows.map((row) => row.cells);

describe('importUpload: CSV', () => {
  test.each([
    ['comma', ','],
    ['semicolon', ';'],
    ['tab', '\t'],
    ['pipe', '|'],
  ])('reads a %s-delimited file', async (_name, d) => {
    const job = await staged(`name${d}email\nAda Lovelace${d}ada@example.com\n`);
    expect(job).toEqual(
      expect.objectContaining({
        fileName: 'contacts.csv',
        format: 'csv',
        state: 'staged',
        columns: ['name', 'email'],
        rowCount: 1,
      }),
    );
    expect(job.rows).toEqual([
      { line: 2, cells: ['Ada Lovelace', 'ada@example.com'], reason: null },
    ]);
  });

  test('reads UTF-8 with and without a BOM, UTF-16 and Windows-1252', async () => {
    const text = 'name,city\nZoë,Kraków\n';
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const windows1252 = Buffer.from('name,city\nZo\xeb,Caf\xe9\n', 'latin1');
    for (const bytes of [Buffer.from(text), Buffer.from(`\ufeff${text}`), utf16]) {
      expect(cellsOf(await staged(bytes))).toEqual([['Zoë', 'Kraków']]);
    }
    expect(cellsOf(await staged(windows1252))).toEqual([['Zoë', 'Café']]);
  });

  test('keeps quoted newlines and delimiters in one cell', async () => {
    const job = await staged('name,notes\n"Ada","line one\nline two, still"\n');
    expect(cellsOf(job)).toEqual([['Ada', 'line one\nline two, still']]);
  });

  test('a row with more or fewer cells than the header still stages, with its counts', async () => {
    const job = await staged('name,email,phone\nAda,ada@example.com\nBea,b@example.com,1,extra\n');
    expect(job.rows.map((row) => row.reason)).toEqual([
      { code: 'row_cell_count_mismatch', meta: { cells: 2, columns: 3 } },
      { code: 'row_cell_count_mismatch', meta: { cells: 4, columns: 3 } },
    ]);
    expect(cellsOf(job)[0]).toEqual(['Ada', 'ada@example.com']);
  });

  test('a misplaced quote leaves its row empty with the line; its neighbours still stage', async () => {
    const job = await staged(
      'name,email\nAda,ada@example.com\nBea,b"e@example.com\nCy,cy@example.com\n',
    );
    expect(job.rows).toEqual([
      { line: 2, cells: ['Ada', 'ada@example.com'], reason: null },
      { line: 3, cells: [], reason: { code: 'row_quote_misplaced', meta: { line: 3 } } },
      { line: 4, cells: ['Cy', 'cy@example.com'], reason: null },
    ]);
  });

  test('cells starting with = + - @ are kept as text, never evaluated', async () => {
    const job = await staged('name,note\n=SUM(A1:A2),+1\n@cmd,-2\n');
    expect(cellsOf(job)).toEqual([
      ['=SUM(A1:A2)', '+1'],
      ['@cmd', '-2'],
    ]);
  });
});

function workbook(rows: unknown[][], bookType: XLSX.BookType): Buffer {
  const book = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(rows), 'Contacts');
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([['ignored']]), 'Other');
  return XLSX.write(book, { type: 'buffer', bookType }) as Buffer;
}

describe('importUpload: spreadsheets', () => {
  test.each([
    ['xlsx', 'contacts.xlsx'],
    ['xls', 'contacts.xls'],
    ['ods', 'contacts.ods'],
  ] as [XLSX.BookType, string][])(
    'reads the first sheet of an .%s file',
    async (bookType, name) => {
      const rows = [
        ['name', 'email', 'employees'],
        ['Ada Lovelace', 'ada@example.com', 12],
        ['Bea', 'bea@example.com', { t: 'n', v: 3, f: 'SUM(1,2)' }],
      ];
      const job = await staged(workbook(rows, bookType), name);
      expect(job.columns).toEqual(['name', 'email', 'employees']);
      // A formula cell stages its cached value.
      expect(cellsOf(job)).toEqual([
        ['Ada Lovelace', 'ada@example.com', '12'],
        ['Bea', 'bea@example.com', '3'],
      ]);
      expect(job.format).toBe(bookType);
    },
  );
});

describe('importUpload: refusals', () => {
  test('a file past 5 MiB is file_too_large; exactly 5 MiB is taken', async () => {
    const max = 5 * 1024 * 1024;
    // Long rows, so the test stages a few thousand of them.
    const line = `Ada Lovelace,${'a'.repeat(1000)}@example.com\n`;
    const body = (size: number) => {
      const head = 'name,email\n';
      const rows = line.repeat(Math.floor((size - head.length) / line.length));
      return head + rows + 'x'.repeat(size - head.length - rows.length);
    };
    const over = await upload(body(max + 1));
    expectReason(over.body, 'VALIDATION', 'file_too_large', { maxBytes: max });
    const exact = await staged(body(max));
    expect(exact.rowCount).toBe(Math.floor((max - 'name,email\n'.length) / line.length) + 1);
  });

  test.each([
    ['an image', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])],
    ['a zip that is no spreadsheet', Buffer.from('PK\x03\x04not a workbook at all')],
    ['an empty file', Buffer.alloc(0)],
    ['ten thousand columns', `${Array.from({ length: 10_000 }, (_, i) => `c${i}`).join(',')}\n`],
  ])('%s is file_unreadable', async (_name, bytes) => {
    const { body } = await upload(bytes);
    expectReason(body, 'VALIDATION', 'file_unreadable');
  });

  test('a 4 MiB cell leaves its row unread (row_malformed); its neighbours stage', async () => {
    const job = await staged(`name\nAda\n${'x'.repeat(4 * 1024 * 1024)}\nBea\n`);
    expect(job.rows).toEqual([
      { line: 2, cells: ['Ada'], reason: null },
      { line: 3, cells: [], reason: { code: 'row_malformed', meta: {} } },
      { line: 4, cells: ['Bea'], reason: null },
    ]);
  });

  test('an anonymous upload is refused before anything is read', async () => {
    const { body } = await upload('name\nAda\n', 'a.csv', {});
    expect(body.errors?.[0]?.extensions.reason).toBe('authentication_required');
  });
});

/** A workbook whose first sheet's XML is `sheetXml`, zipped as SheetJS writes one. */
function workbookWithSheet(sheetXml: string): Buffer {
  const cfb = (XLSX as unknown as { CFB: CfbApi }).CFB;
  const zip = cfb.read(workbook([['name'], ['Ada']], 'xlsx'), { type: 'buffer' });
  cfb.find(zip, '/xl/worksheets/sheet1.xml')!.content = Buffer.from(sheetXml);
  return cfb.write(zip, { type: 'buffer', fileType: 'zip', compression: true });
}

interface CfbApi {
  read(data: Buffer, options: { type: 'buffer' }): object;
  find(zip: object, path: string): { content: Buffer } | null;
  write(zip: object, options: { type: 'buffer'; fileType: 'zip'; compression: boolean }): Buffer;
}

const SHEET = (rows: string) =>
  `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows}</sheetData></worksheet>`;

describe('importUpload: hostile files', () => {
  test('a zip bomb (a small file that inflates past the row cap) is file_unreadable', async () => {
    const row = (r: number) =>
      `<row r="${r}"><c r="A${r}" t="inlineStr"><is><t>x</t></is></c></row>`;
    const bomb = workbookWithSheet(
      SHEET(Array.from({ length: 250_000 }, (_, i) => row(i + 1)).join('')),
    );
    expect(bomb.length).toBeLessThan(5 * 1024 * 1024); // taken as a file; about 16 MB of XML inside
    const { body } = await upload(bomb, 'bomb.xlsx');
    expectReason(body, 'VALIDATION', 'file_unreadable');
    expect(body.errors?.[0]?.message).toBe('file unreadable: more than 200000 rows');
  });

  test('billion laughs: entities are never expanded, the reference stages as written', async () => {
    const entities = Array.from(
      { length: 9 },
      (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`,
    ).join('');
    const sheet = SHEET(
      '<row r="1"><c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row>',
    ).replace('<worksheet', `<!DOCTYPE lolz [<!ENTITY lol "lol">${entities}]><worksheet`);
    const job = await staged(workbookWithSheet(sheet), 'laughs.xlsx');
    expect(job.columns).toEqual(['&lol9;']);
    expect(job.rowCount).toBe(0);
  });

  test('a huge shared-strings table is file_unreadable by its declared size, before it is inflated', async () => {
    const book = XLSX.utils.book_new();
    XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([['name'], ['Ada']]), 'Contacts');
    const cfb = (XLSX as unknown as { CFB: CfbApi }).CFB;
    const zip = cfb.read(
      XLSX.write(book, { type: 'buffer', bookType: 'xlsx', bookSST: true }) as Buffer,
      { type: 'buffer' },
    );
    // 150,000 strings of 1,000 characters the sheet never uses: 150 MB of XML inside.
    const entry = `<si><t>${'x'.repeat(1_000)}</t></si>`;
    cfb.find(zip, '/xl/sharedStrings.xml')!.content = Buffer.from(
      `<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>name</t></si><si><t>Ada</t></si>${entry.repeat(150_000)}</sst>`,
    );
    const file = cfb.write(zip, { type: 'buffer', fileType: 'zip', compression: true });
    expect(file.length).toBeLessThan(5 * 1024 * 1024);
    // While the worker chews on it, the server keeps answering: { version } is timed from
    // the moment the worker runs, and answers before the upload does.
    const parsing = new Promise<void>((resolve) =>
      subscribe('svc:worker:online', function online() {
        unsubscribe('svc:worker:online', online);
        resolve();
      }),
    );
    let uploadSettled = false;
    const pending = upload(file, 'strings.xlsx').finally(() => (uploadSettled = true));
    await parsing;
    const started = performance.now();
    const version = await svc.graph('{ version }', {});
    const latencyMs = performance.now() - started;
    expect(version.body.data).toEqual({ version: expect.any(String) });
    expect(uploadSettled).toBe(false);
    expect(latencyMs).toBeGreaterThan(0); // reported by --verbose runs, never a threshold
    const { body } = await pending;
    expectReason(body, 'VALIDATION', 'file_unreadable');
    expect(body.errors?.[0]?.message).toBe('file unreadable: it inflates to more than 64 MiB');
  });

  test('a CSV row holding a NUL is row_malformed; its neighbours stage', async () => {
    const job = await staged(
      'name,email\nAda,ada@example.com\nN\u0000l,nul@example.com\nBea,b@example.com\n',
    );
    expect(job.rows).toEqual([
      { line: 2, cells: ['Ada', 'ada@example.com'], reason: null },
      { line: 3, cells: [], reason: { code: 'row_malformed', meta: {} } },
      { line: 4, cells: ['Bea', 'b@example.com'], reason: null },
    ]);
  });

  test('a cell holding text the database can’t store (NUL, a lone surrogate) leaves its row row_malformed', async () => {
    const cell = (r: number, text: string) =>
      `<row r="${r}"><c r="A${r}" t="inlineStr"><is><t>${text}</t></is></c></row>`;
    const job = await staged(
      workbookWithSheet(
        SHEET(
          [
            cell(1, 'name'),
            cell(2, 'Ada'),
            cell(3, 'Nul_x0000_Byte'),
            cell(4, 'Half_xD800_Pair'),
            cell(5, 'Bea'),
          ].join(''),
        ),
      ),
      'odd.xlsx',
    );
    expect(job.rows).toEqual([
      { line: 2, cells: ['Ada'], reason: null },
      { line: 3, cells: [], reason: { code: 'row_malformed', meta: {} } },
      { line: 4, cells: [], reason: { code: 'row_malformed', meta: {} } },
      { line: 5, cells: ['Bea'], reason: null },
    ]);
  });

  test('a file that lies about its type is read by what it holds', async () => {
    const job = await staged('name,email\nAda,ada@example.com\n', 'contacts.xlsx');
    expect(job).toEqual(expect.objectContaining({ format: 'csv', rowCount: 1 }));
  });
});

describe('imports and importJob', () => {
  test('page the workspace’s imports newest first and filter staged rows by reason', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const first = dataOf<StagedImport>(
      (await upload('name\nA\n', 'one.csv', headers)).body,
      'importUpload',
    );
    const second = dataOf<StagedImport>(
      (await upload('name,email\nB\nC,c@example.com\n', 'two.csv', headers)).body,
      'importUpload',
    );
    const listed = await svc.graph('{ imports { id fileName } }', {}, headers);
    expect(dataOf(listed.body, 'imports')).toEqual([
      { id: second.id, fileName: 'two.csv' },
      { id: first.id, fileName: 'one.csv' },
    ]);
    const older = await svc.graph(
      'query ($before: UUID) { imports(before: $before) { id } }',
      { before: second.id },
      headers,
    );
    expect(dataOf(older.body, 'imports')).toEqual([{ id: first.id }]);
    const rows = await svc.graph(
      `query ($id: UUID!) { importJob(id: $id) {
        mismatched: rows(reason: "row_cell_count_mismatch") { line }
        clean: rows(reason: "") { line }
      } }`,
      { id: second.id },
      headers,
    );
    expect(dataOf(rows.body, 'importJob')).toEqual({
      mismatched: [{ line: 2 }],
      clean: [{ line: 3 }],
    });
  });

  test('another workspace’s import answers as a made-up one', async () => {
    const theirs = await freshWorkspaceHeaders(svc);
    const foreign = dataOf<StagedImport>(
      (await upload('name\nA\n', 'theirs.csv', theirs.headers)).body,
      'importUpload',
    );
    for (const id of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
      const { body } = await svc.graph('query ($id: UUID!) { importJob(id: $id) { id } }', { id });
      expectReason(body, 'NOT_FOUND', 'import_not_found');
    }
  });
});
