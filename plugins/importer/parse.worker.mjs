// Reads an uploaded file in a worker process (src/workers/run.ts holds it to memory, time
// and answer limits): a CSV in any common delimiter and encoding, or a spreadsheet's first
// sheet. Its default export is a generator, read with `streamInWorker` one value at a time:
// first { ok: true, format, columns, rowCount } (or { ok: false, problem }, or { ok: false,
// tooLarge: true } when the rows' text passes `limits.maxAnswerChars`), then the rows as
// batches, each the JSON text of up to `limits.batchRows` rows [{ line, cells, reason }]
// and at most `limits.batchChars` characters (or one row alone), ready to be stored as it
// is, so the serving process neither copies nor walks the rows, and holds one batch at a
// time. The whole file is read before the first value, so a file that can't be read is
// known before anything is stored. Plain JavaScript, so the worker needs no loader.
import { parse } from 'csv-parse/sync';
import * as XLSX from 'xlsx';

let data;
let limits;

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

/**
 * Whether decoded text is a binary file's (an image, an archive): more than one character
 * in ten of its start is a control character other than tab, CR and LF. A NUL here and
 * there is a row's problem (that row is `row_malformed`), not the file's.
 */
function looksBinary(text) {
  const start = text.slice(0, 8000);
  let controls = 0;
  for (let i = 0; i < start.length; i += 1) {
    const code = start.charCodeAt(i);
    if (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) controls += 1;
  }
  return controls * 10 > start.length;
}

/**
 * A CSV cell as it was before an export kept it from running as a formula: one leading `'`
 * taken off where apostrophes lead to `=`, `+`, `-`, `@`, a tab or a carriage return
 * (export-cells.ts `escapeFormula` adds it). Any other apostrophe (`'t Hooft`) stays.
 */
export function unescapeFormula(cell) {
  return /^'+[=+\-@\t\r]/.test(cell) ? cell.slice(1) : cell;
}

function readCsv() {
  const text = decode();
  if (looksBinary(text)) unreadable('not text');
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
  const rows = records.map(({ record, info }) => ({
    line: info.lines,
    cells: record.map(unescapeFormula),
  }));
  for (const { line, code } of skipped) rows.push({ line, cells: [], skipped: code });
  rows.sort((a, b) => a.line - b.line);
  return { format: 'csv', rows };
}

/**
 * The sum of the sizes a zip's central directory says its entries inflate to: the cheap
 * first line against a zip bomb, judged before anything is inflated. A zip that lies about
 * its sizes is still held to the worker's memory limit. Null when the directory can't be
 * found (the reader then refuses the file itself).
 */
function declaredInflatedBytes() {
  const END = 0x06054b50;
  const CENTRAL = 0x02014b50;
  const earliest = Math.max(0, data.length - 22 - 0xffff);
  let end = -1;
  for (let at = data.length - 22; at >= earliest; at -= 1) {
    if (data.readUInt32LE(at) === END) {
      end = at;
      break;
    }
  }
  if (end < 0) return null;
  const entries = data.readUInt16LE(end + 10);
  let at = data.readUInt32LE(end + 16);
  let total = 0;
  for (let i = 0; i < entries; i += 1) {
    if (at + 46 > data.length || data.readUInt32LE(at) !== CENTRAL) return null;
    const size = data.readUInt32LE(at + 24);
    // 0xffffffff defers to a zip64 record: a size no upload of 5 MiB should need.
    total += size === 0xffffffff ? Infinity : size;
    at += 46 + data.readUInt16LE(at + 28) + data.readUInt16LE(at + 30) + data.readUInt16LE(at + 32);
  }
  return total;
}

function readSpreadsheet() {
  if (startsWith(ZIP)) {
    const inflated = declaredInflatedBytes();
    if (inflated !== null && inflated > limits.maxInflatedBytes) {
      unreadable(`it inflates to more than ${limits.maxInflatedBytes / (1024 * 1024)} MiB`);
    }
  }
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
  return { format: file.format, columns, rows };
}

/**
 * The rows as batches of JSON text: up to `limits.batchRows` rows, cut early before a row
 * that would take the batch past `limits.batchChars` characters (a row longer than that
 * goes alone).
 */
function batchesOf(rows) {
  const batches = [];
  let batch = [];
  let chars = 0;
  for (const row of rows) {
    const text = JSON.stringify(row);
    if (
      batch.length > 0 &&
      (batch.length >= limits.batchRows || chars + text.length > limits.batchChars)
    ) {
      batches.push(`[${batch.join(',')}]`);
      batch = [];
      chars = 0;
    }
    batch.push(text);
    chars += text.length + 1;
  }
  if (batch.length > 0) batches.push(`[${batch.join(',')}]`);
  return batches;
}

/** The worker's entry: `bytes` (the file) read within `limits` (PARSE_LIMITS), in batches. */
export default function* readUpload(input) {
  data = Buffer.from(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength);
  limits = input.limits;
  let file;
  try {
    file = read();
  } catch (error) {
    yield {
      ok: false,
      problem:
        error instanceof Unreadable ? error.message : 'not a CSV or spreadsheet this service reads',
    };
    return;
  }
  data = null;
  const rowCount = file.rows.length;
  const batches = batchesOf(file.rows);
  file.rows = null;
  const chars = batches.reduce((sum, batch) => sum + batch.length, 0);
  if (chars > limits.maxAnswerChars) {
    yield { ok: false, tooLarge: true };
    return;
  }
  yield { ok: true, format: file.format, columns: file.columns, rowCount };
  for (let i = 0; i < batches.length; i += 1) {
    const batch = batches[i];
    batches[i] = null; // sent: the worker no longer needs it
    yield batch;
  }
}
