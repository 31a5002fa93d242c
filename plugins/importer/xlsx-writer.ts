// A streaming .xlsx writer: the few OOXML parts a workbook of one sheet needs, zipped by
// fflate's streaming Zip as rows arrive, so a sheet of a million rows never sits whole in
// memory (docs/decisions.md says why not exceljs or SheetJS). Every cell is an inline
// string: text a spreadsheet shows as written and never evaluates as a formula.
import { Zip, ZipDeflate } from 'fflate';

/** Rows one sheet holds at most (Excel's grid: 1,048,576, the header one of them). */
export const XLSX_MAX_ROWS = 1_048_576;

const encoder = new TextEncoder();
const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PKG_REL = 'http://schemas.openxmlformats.org/package/2006/relationships';

const STATIC_PARTS: [string, string][] = [
  [
    '[Content_Types].xml',
    `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
      '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
      '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
      '</Types>',
  ],
  [
    '_rels/.rels',
    `${XML}<Relationships xmlns="${PKG_REL}">` +
      `<Relationship Id="rId1" Type="${REL}/officeDocument" Target="xl/workbook.xml"/>` +
      '</Relationships>',
  ],
  [
    'xl/workbook.xml',
    `${XML}<workbook xmlns="${MAIN}" xmlns:r="${REL}">` +
      '<sheets><sheet name="Contacts" sheetId="1" r:id="rId1"/></sheets></workbook>',
  ],
  [
    'xl/_rels/workbook.xml.rels',
    `${XML}<Relationships xmlns="${PKG_REL}">` +
      `<Relationship Id="rId1" Type="${REL}/worksheet" Target="worksheets/sheet1.xml"/>` +
      `<Relationship Id="rId2" Type="${REL}/styles" Target="styles.xml"/>` +
      '</Relationships>',
  ],
  [
    'xl/styles.xml',
    `${XML}<styleSheet xmlns="${MAIN}">` +
      '<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>' +
      '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
      '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
      '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
      '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>' +
      '</styleSheet>',
  ],
];

/**
 * Text as the content of an inline string: XML's five characters escaped; a carriage
 * return as a character reference (an XML reader turns a literal one into a line feed);
 * characters XML 1.0 cannot hold and a literal `_xHHHH_` in OOXML's own escape, so a reader
 * (Excel, SheetJS) gives back the text as it was.
 */
export function xmlText(text: string): string {
  return text
    .replace(/_(x[0-9a-fA-F]{4}_)/g, '_x005F_$1')
    .replace(/[&<>"\r\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, (c) => {
      switch (c) {
        case '&':
          return '&amp;';
        case '<':
          return '&lt;';
        case '>':
          return '&gt;';
        case '"':
          return '&quot;';
        case '\r':
          return '&#13;';
        default:
          return `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}_`;
      }
    });
}

/**
 * One workbook of one sheet, written as rows are given: `rows` adds a batch and answers
 * the zip's bytes made so far; `end` finishes the sheet and the zip. Deflate runs as the
 * rows are pushed, so what is held is one batch and the deflater's window.
 */
export class XlsxWriter {
  private readonly zip: Zip;
  private readonly sheet = new ZipDeflate('xl/worksheets/sheet1.xml', { level: 6 });
  private out: Uint8Array[] = [];
  private failure: Error | null = null;
  private rowCount = 0;

  constructor() {
    this.zip = new Zip((error, chunk) => {
      if (error) this.failure = error;
      else this.out.push(chunk);
    });
    for (const [name, text] of STATIC_PARTS) {
      const part = new ZipDeflate(name, { level: 6 });
      this.zip.add(part);
      part.push(encoder.encode(text), true);
    }
    this.zip.add(this.sheet);
    this.sheet.push(encoder.encode(`${XML}<worksheet xmlns="${MAIN}"><sheetData>`));
  }

  /** Rows written so far. */
  get rows(): number {
    return this.rowCount;
  }

  /** Adds rows of text cells; answers the bytes ready to send. */
  add(rows: readonly (readonly string[])[]): Uint8Array[] {
    let xml = '';
    for (const cells of rows) {
      this.rowCount += 1;
      xml += `<row r="${this.rowCount}">`;
      for (const cell of cells) {
        xml +=
          cell === ''
            ? '<c/>'
            : `<c t="inlineStr"><is><t xml:space="preserve">${xmlText(cell)}</t></is></c>`;
      }
      xml += '</row>';
    }
    this.sheet.push(encoder.encode(xml));
    return this.take();
  }

  /** Closes the sheet and the zip; answers the last bytes. */
  end(): Uint8Array[] {
    this.sheet.push(encoder.encode('</sheetData></worksheet>'), true);
    this.zip.end();
    return this.take();
  }

  private take(): Uint8Array[] {
    if (this.failure) throw this.failure;
    const chunks = this.out;
    this.out = [];
    return chunks;
  }
}
