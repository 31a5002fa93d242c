// Custom field values as the cells of a file of contacts (docs/fields.md "In a file"):
// the text the importer's export writes for each kind, and the value the import reads back
// from that text, so an exported workspace imports as the same values.
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import {
  listCell,
  splitListCell,
  type AppError,
  type CheckedFieldValues,
  type Db,
  type ExportField,
  type WritableField,
} from '../../src/plugin-sdk/index.js';
import { checkValues, fieldsByName, selectValues } from './values.js';
import { contactFieldEntries, type FieldDefinition } from './tables.js';

/** A live field as an export lists it: every kind, the repeater included. */
export function exportField(definition: FieldDefinition): ExportField {
  return {
    id: definition.id,
    name: definition.name,
    label: definition.label,
    kind: definition.kind,
  };
}

/**
 * A stored value as a cell: text kinds, dates, numbers (the canonical decimal) as stored;
 * a boolean `true` or `false`; a multi_select its options as a list cell (`a; b`); a
 * currency its amount (the field names the currency). Null is the empty cell.
 */
export function cellText(kind: string, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (kind === 'multi_select' && Array.isArray(value)) return listCell(value.map(String));
  if (kind === 'currency' && typeof value === 'object' && 'amount' in value) {
    return String((value as { amount: unknown }).amount);
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * A cell as the value the field's kind judges: a boolean's `true`/`false` (any letter
 * case, as a spreadsheet shows them) as JSON booleans, a multi_select's list cell as its
 * items; every other kind judges the text itself.
 */
export function cellValue(kind: string, text: string): unknown {
  const trimmed = text.trim();
  if (kind === 'boolean') {
    const lower = trimmed.toLowerCase();
    return lower === 'true' ? true : lower === 'false' ? false : trimmed;
  }
  if (kind === 'multi_select') return splitListCell(trimmed);
  return trimmed;
}

/** `checkValues` over cells of a file (field name → cell text), each read by its kind. */
export function checkCells(
  fields: readonly WritableField[],
  cells: Readonly<Record<string, string>>,
): CheckedFieldValues | AppError {
  const byName = fieldsByName(fields);
  // No prototype: a field's name is only ever a key here.
  const values = Object.create(null) as Record<string, unknown>;
  for (const name of Object.keys(cells)) {
    values[name] = cellValue(byName.get(name)?.field.kind ?? '', cells[name]!);
  }
  return checkValues(fields, values);
}

/**
 * The cells of `fields` for a batch of contacts, in `tx` (the export's snapshot): one read
 * of values and one of repeater entries. A repeater's cell is its entries, oldest first, as
 * a JSON array of objects of sub field names to values (no entry ids); none is the empty cell.
 */
export async function readCells(
  tx: Db,
  input: { workspaceId: string; fields: readonly ExportField[]; contactIds: readonly string[] },
): Promise<Map<string, string[]>> {
  const { workspaceId, fields, contactIds } = input;
  const cells = new Map(contactIds.map((id) => [id, fields.map(() => '')]));
  if (contactIds.length === 0 || fields.length === 0) return cells;
  const column = new Map(fields.map((field, i) => [field.id, i]));
  const plain = fields.filter((field) => field.kind !== 'repeater').map((field) => field.id);
  const repeaters = fields.filter((field) => field.kind === 'repeater').map((field) => field.id);
  if (plain.length > 0) {
    const rows = await selectValues(tx, workspaceId, contactIds, plain);
    for (const row of rows) {
      const i = column.get(row.fieldId)!;
      cells.get(row.contactId)![i] = cellText(fields[i]!.kind, row.value);
    }
  }
  if (repeaters.length > 0) {
    const rows = await tx
      .select({
        contactId: contactFieldEntries.contactId,
        fieldId: contactFieldEntries.fieldId,
        entries: sql<Record<string, unknown>[]>`json_agg(${contactFieldEntries.cells}
          order by ${contactFieldEntries.createdAt}, ${contactFieldEntries.id})`,
      })
      .from(contactFieldEntries)
      .where(
        and(
          eq(contactFieldEntries.workspaceId, workspaceId),
          inArray(contactFieldEntries.contactId, [...contactIds]),
          inArray(contactFieldEntries.fieldId, repeaters),
        ),
      )
      .groupBy(contactFieldEntries.contactId, contactFieldEntries.fieldId)
      .orderBy(asc(contactFieldEntries.contactId));
    for (const row of rows) {
      cells.get(row.contactId)![column.get(row.fieldId)!] = JSON.stringify(row.entries);
    }
  }
  return cells;
}
