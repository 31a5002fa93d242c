// How an export writes its cells (docs/importer.md "Export"): CSV lines with the formula
// rule, and the cells of one contact in the file's columns.
import { listCell, type ExportedContact } from '../../src/plugin-sdk/index.js';

/**
 * What a spreadsheet runs as a formula when a cell starts with it (OWASP "CSV Injection"):
 * `=`, `+`, `-`, `@`, a tab or a carriage return.
 */
const FORMULA_START = /^'*[=+\-@\t\r]/;

/**
 * A CSV cell's text kept as text: one `'` before a cell that would start a formula, and
 * before one that already starts with apostrophes followed by such a character, so the
 * import (parse.worker.mjs, `unescapeFormula`) takes exactly one off and reads back the
 * value as it was. Any other text is written as it is.
 */
export function escapeFormula(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

/** One CSV record: every cell quoted (quotes doubled), the formula rule applied, CRLF. */
export function csvLine(cells: readonly string[]): string {
  return `${cells.map((cell) => `"${escapeFormula(cell).replaceAll('"', '""')}"`).join(',')}\r\n`;
}

/** The header: `name`, then `identity:<channel>` and `field:<name>`, as `importFields` keys them. */
export function headerCells(channels: readonly string[], fieldNames: readonly string[]): string[] {
  return [
    'name',
    ...channels.map((channel) => `identity:${channel}`),
    ...fieldNames.map((name) => `field:${name}`),
  ];
}

/** A contact's cells: its name, a list cell of its identifiers per channel, its field cells. */
export function contactCells(
  contact: ExportedContact,
  channels: readonly string[],
  fieldCells: readonly string[],
): string[] {
  const byChannel = new Map<string, string[]>();
  for (const { channel, identifier } of contact.identities) {
    const list = byChannel.get(channel);
    if (list) list.push(identifier);
    else byChannel.set(channel, [identifier]);
  }
  return [
    contact.name,
    ...channels.map((channel) => listCell(byChannel.get(channel) ?? [])),
    ...fieldCells,
  ];
}
