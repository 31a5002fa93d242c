// The cell form of a list in a file of contacts (docs/importer.md "Export"): several
// identities of one channel, a multi_select's options. Written by the export, read by the
// import, so a file the service writes reads back as the same items.

/** What separates the items of a list cell: a semicolon and a space. */
export const LIST_SEPARATOR = '; ';

/**
 * Items as one cell: joined by `; `, a `;` or `\` inside an item escaped with a `\`
 * (`a;b` is written `a\;b`). No item: the empty cell.
 */
export function listCell(items: readonly string[]): string {
  return items.map((item) => item.replace(/[\\;]/g, (c) => `\\${c}`)).join(LIST_SEPARATOR);
}

/**
 * A list cell's items: split at each `;` not escaped by a `\`, escapes undone, each item
 * trimmed, empty ones dropped. A cell without a `;` is one item.
 */
export function splitListCell(cell: string): string[] {
  // Most cells hold one item: no string built a character at a time (an import reads
  // 100,000 of them; that cost 1 KB of garbage each).
  if (!cell.includes(';') && !cell.includes('\\')) {
    const item = cell.trim();
    return item === '' ? [] : [item];
  }
  const items: string[] = [];
  let current = '';
  for (let i = 0; i < cell.length; i += 1) {
    const c = cell[i]!;
    if (c === '\\' && i + 1 < cell.length && (cell[i + 1] === ';' || cell[i + 1] === '\\')) {
      current += cell[i + 1];
      i += 1;
    } else if (c === ';') {
      items.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  items.push(current);
  return items.map((item) => item.trim()).filter((item) => item !== '');
}
