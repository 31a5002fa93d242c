// Services one plugin offers the others. The contract of each lives here, in the SDK, so a
// plugin calling another imports only the SDK; the plugin that implements it registers it
// with `provideService` when its backend loads.
import type { SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import type { AppError } from '../errors.js';
import type { CacheScope } from '../workspaces/cache.js';

/** A live custom field another plugin may write (every kind but the repeater). */
export interface WritableField {
  id: string;
  name: string;
  label: string;
  kind: string;
  /** A select's options. */
  options?: readonly string[];
  /** A currency field's ISO 4217 code. */
  currency?: string;
}

/** A live custom field as an export lists it: every kind, the repeater included. */
export interface ExportField {
  id: string;
  name: string;
  label: string;
  kind: string;
}

/** Values judged against a workspace's fields, ready for `writeValues`. */
export interface CheckedFieldValues {
  /** Each named field with its stored form; `null` clears it. */
  readonly values: readonly { field: WritableField; value: unknown }[];
}

/**
 * What the `fields` plugin offers (docs/fields.md, "From another plugin"). The members
 * marked optional came later: a provider without them still serves the import (cells
 * judged as text by `checkValues`), and an export then writes no field columns.
 */
export interface FieldsService {
  /** The workspace's live fields a value can be written to, in the workspace's order. */
  writableFields(scope: CacheScope, workspaceId: string): Promise<readonly WritableField[]>;
  /**
   * Judges an object of names to values against `fields`, as `writeContactFields` does:
   * the stored forms, or the refusal the graph would answer (`values_not_an_object`,
   * `field_unknown`, `field_repeater_entries_only`, `value_kind_mismatch`).
   */
  checkValues(fields: readonly WritableField[], values: unknown): CheckedFieldValues | AppError;
  /**
   * `checkValues` over the cells of a file (field name → cell text), each read by its
   * field's kind as the export writes it (docs/fields.md "In a file"): `true`/`false` for a
   * boolean, a list cell (`a; b`) for a multi_select, the text itself for the rest.
   */
  checkCells?(
    fields: readonly WritableField[],
    cells: Readonly<Record<string, string>>,
  ): CheckedFieldValues | AppError;
  /** The workspace's live fields an export writes a column for, repeaters too, in order. */
  exportFields?(scope: CacheScope, workspaceId: string): Promise<readonly ExportField[]>;
  /**
   * The cells of `fields` for a batch of contacts, read in `tx` (the export's snapshot):
   * contact id → one cell text per field, '' for none (docs/fields.md "In a file").
   */
  readCells?(
    tx: Db,
    input: {
      workspaceId: string;
      fields: readonly ExportField[];
      contactIds: readonly string[];
    },
  ): Promise<Map<string, string[]>>;
  /**
   * Writes checked values of a contact inside the caller's transaction and records
   * `contact.fields_changed` there (unless `event` is false). The contact must be the workspace's (a foreign key
   * refuses another).
   */
  writeValues(
    tx: Db,
    input: {
      workspaceId: string;
      contactId: string;
      actorUserId: string | null;
      checked: CheckedFieldValues;
      /** Records `contact.fields_changed`; a bulk writer records its own summary. @default true */
      event?: boolean;
    },
  ): Promise<void>;
  /**
   * `writeValues` for many contacts at once, in batched statements: what a bulk writer
   * (the importer's commit) uses. Records no event when `event` is false. `fresh` says the
   * contacts were created in this transaction and hold no value yet: the values are then
   * written with COPY (`copyRows`), null ones skipped.
   */
  writeValuesMany(
    tx: Db,
    input: {
      workspaceId: string;
      actorUserId: string | null;
      writes: readonly { contactId: string; checked: CheckedFieldValues }[];
      event?: boolean;
      fresh?: boolean;
    },
  ): Promise<void>;
  /**
   * Fills checked values of many contacts where a contact holds none for the field (a
   * merge into an existing contact: its stored value wins; of two writes naming one
   * contact's field, the first). Batched statements; `contact.fields_changed` per contact
   * filled unless `event` is false. Answers each contact that gained a value, with the
   * names of the fields it gained.
   */
  fillValuesMany(
    tx: Db,
    input: {
      workspaceId: string;
      actorUserId: string | null;
      writes: readonly { contactId: string; checked: CheckedFieldValues }[];
      /** Records `contact.fields_changed` per contact filled. @default true */
      event?: boolean;
    },
  ): Promise<{ contactId: string; fields: string[] }[]>;
  /**
   * Writes values a select stages (`contact_id`, `field_id`, `value`: the stored forms
   * `checkValues` or `checkCells` answered, none null) in the caller's transaction, one
   * statement: for contacts created in that transaction, or with `fill` only where a
   * contact holds none for the field, the first of the select's order filling first (a
   * merge's rule). Records no event: the caller records its own summary. A provider
   * without it is written through `writeValuesMany` and `fillValuesMany` instead.
   */
  writeValuesFrom?(
    tx: Db,
    input: { workspaceId: string; values: SQL; fill?: boolean },
  ): Promise<void>;
}

/** Every plugin service by the id of the plugin that provides it. */
export interface PluginServices {
  fields: FieldsService;
}

const provided = new Map<keyof PluginServices, unknown>();

/** Registers the service a plugin provides (its backend does this when it loads). */
export function provideService<K extends keyof PluginServices>(
  id: K,
  service: PluginServices[K],
): void {
  provided.set(id, service);
}

/** Another plugin's service; undefined when that plugin is not installed. */
export function findService<K extends keyof PluginServices>(id: K): PluginServices[K] | undefined {
  return provided.get(id) as PluginServices[K] | undefined;
}
