// Reads an uploaded file on a worker thread (src/workers/run.ts holds it to a heap and a
// time limit): a CSV in any common delimiter and encoding, or a spreadsheet's first sheet.
// Answers { ok: true, format, columns, rowCount, batches } or { ok: false, problem }: each
// batch is the JSON text of up to `limits.batchRows` rows [{ line, cells, reason }], ready
// to be stored as it is, so the serving thread neither copies nor walks the rows. Plain
// JavaScript, so the worker needs no loader.
import { parentPort, workerData } from 'node:worker_threads';
import { parse } from 'csv-parse/sync';
import * as XLSX from 'xlsx';

const { bytes, limits } = workerData;
const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

class Unreadable extends Error {}

/** Refuses the file, naming what is wrong with it. */
function unreadable(problem) {
  throw new Unreadable(problem);
}

const ZIP = [0x50, 0x4b, 0x03, 0x04];
const OLE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
const startsWith = (signature) => signature.every((byte, i) => data[i] === byte);

/** UTF-8 (with or without BOM), UTF-16 by its BOM, else Windows-1252. */
function decode() {
  if (data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) {
    return new TextDecoder('utf-8', { fatal: true }).decode(data.subarray(3));
  }
  if (data[0] === 0xff && data[1] === 0xfe)
    return new TextDecoder('utf-16le').decode(data.subarray(2));
  if (data[0] === 0xfe && data[1] === 0xff)
    return new TextDecoder('utf-16be').decode(data.subarray(2));
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    return new TextDecoder('windows-1252').decode(data);
  }
}

/** The delimiter of the header line: the most frequent of , ; tab | outside quotes. */
function delimiterOf(text) {
  let quoted = false;
  const counts = { ',': 0, ';': 0, '\t': 0, '|': 0 };
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === '\n' || char === '\r')) break;
    else if (!quoted && char in counts) counts[char] += 1;
  }
  const [best, count] = Object.entries(counts).sort((a, b) => b[1] - a[1])[0];
  return count > 0 ? best : ',';
}

/**
 * Whether every cell is within its cap and is text the database can store: no NUL, no lone
 * UTF-16 surrogate (a spreadsheet can spell both as `_x0000_`). Any other leaves its row unread.
 */
const cellsFit = (cells) =>
  cells.every(
    (cell) => cell.length <= limits.maxCellChars && !cell.includes('\u0000') && cell.isWellFormed(),
  );

function readCsv() {
  const text = decode();
  if (text.includes('\u0000')) unreadable('not text');
  const delimiter = delimiterOf(text);
  const skipped = [];
  const records = parse(text, {
    delimiter,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    info: true,
    on_skip: (error) => {
      // One bad line can raise several errors: it is one row.
      const line = error?.lines ?? 0;
      if (skipped.some((row) => row.line === line)) return;
      const quote = /QUOTE/.test(error?.code ?? '');
      skipped.push({ line, code: quote ? 'row_quote_misplaced' : 'row_malformed' });
    },
  });
  if (records.length === 0) unreadable('no header row');
  const rows = records.map(({ record, info }) => ({ line: info.lines, cells: record }));
  for (const { line, code } of skipped) rows.push({ line, cells: [], skipped: code });
  rows.sort((a, b) => a.line - b.line);
  return { format: 'csv', rows };
}

function readSpreadsheet() {
  let workbook;
  try {
    workbook = XLSX.read(data, {
      type: 'buffer',
      dense: true,
      cellFormula: false,
      cellHTML: false,
      cellStyles: false,
      sheetRows: limits.maxRows + 2,
      WTF: false,
    });
  } catch {
    unreadable('not a spreadsheet this service reads');
  }
  const name = workbook.SheetNames[0];
  if (!name) unreadable('no sheet');
  const sheet = workbook.Sheets[name];
  const range = sheet['!ref'] ? XLSX.utils.decode_range(sheet['!ref']) : null;
  if (range && range.e.c + 1 > limits.maxColumns)
    unreadable(`more than ${limits.maxColumns} columns`);
  // Formula cells answer their cached value; nothing is evaluated.
  const grid = XLSX.utils.sheet_to_json(sheet, {
    header: 1,
    raw: false,
    defval: '',
    blankrows: false,
  });
  // An ODS zip names its `mimetype` entry (and `content.xml`); an XLSX names
  // `[Content_Types].xml`. Entry names are plain text in the zip's local headers.
  const head = data.subarray(0, 4096);
  const ods = head.includes('mimetype') && !head.includes('[Content_Types].xml');
  return {
    format: startsWith(OLE) ? 'xls' : ods ? 'ods' : 'xlsx',
    rows: grid.map((cells, i) => ({ line: i + 1, cells: cells.map((cell) => String(cell)) })),
  };
}

function read() {
  const zip = startsWith(ZIP);
  const ole = startsWith(OLE);
  const file = zip || ole ? readSpreadsheet() : readCsv();
  const [header, ...body] = file.rows;
  if (!header || header.skipped) unreadable('no header row');
  const columns = header.cells.map((cell) => String(cell).trim());
  if (columns.every((column) => column === '')) unreadable('no header row');
  if (columns.length > limits.maxColumns) unreadable(`more than ${limits.maxColumns} columns`);
  if (!cellsFit(columns))
    unreadable(`a header cell holds more than ${limits.maxCellChars} characters or is not text`);
  if (body.length > limits.maxRows) unreadable(`more than ${limits.maxRows} rows`);
  const rows = body.map((row) => {
    if (row.skipped) {
      const meta = row.skipped === 'row_quote_misplaced' ? { line: row.line } : {};
      return { line: row.line, cells: [], reason: { code: row.skipped, meta } };
    }
    if (row.cells.length > limits.maxColumns || !cellsFit(row.cells)) {
      return { line: row.line, cells: [], reason: { code: 'row_malformed', meta: {} } };
    }
    const reason =
      row.cells.length !== columns.length
        ? {
            code: 'row_cell_count_mismatch',
            meta: { cells: row.cells.length, columns: columns.length },
          }
        : null;
    return { line: row.line, cells: row.cells, reason };
  });
  const batches = [];
  for (let i = 0; i < rows.length; i += limits.batchRows) {
    batches.push(JSON.stringify(rows.slice(i, i + limits.batchRows)));
  }
  return { ok: true, format: file.format, columns, rowCount: rows.length, batches };
}

try {
  parentPort.postMessage(read());
} catch (error) {
  parentPort.postMessage({
    ok: false,
    problem:
      error instanceof Unreadable ? error.message : 'not a CSV or spreadsheet this service reads',
  });
}
