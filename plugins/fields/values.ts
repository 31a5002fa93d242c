// Custom field values of contacts: writing them (whole values, and a repeater's entries
// one at a time), reading them a page at a time, and the service other plugins call.
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import {
  AppError,
  contactExists,
  copyRows,
  findContactRef,
  loaderFamily,
  recordEvent,
  refuse,
  signedIn,
  type CheckedFieldValues,
  type Context,
  type Db,
  type FieldsService,
  type WritableField,
} from '../../src/plugin-sdk/index.js';
import { liveDefinitions } from './definitions.js';
import { judgeValue, subFieldSpec, type Kind, type KindSpec } from './kinds.js';
import {
  contactFieldEntries,
  contactFieldValues,
  type FieldDefinition,
  type FieldEntryRow,
} from './tables.js';

/** The event every value write records (its data: `contactId` and the field names). */
export const FIELDS_CHANGED = 'contact.fields_changed';

/** Names a refusal lists at most (a values object may hold many). */
const NAMES_LISTED = 20;

/** A repeater's entry as read: its id beside its cells. */
export type Entry = { id: string } & Record<string, unknown>;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A definition as another plugin sees it (the SDK's WritableField). */
export function writableField(definition: FieldDefinition): WritableField {
  return {
    id: definition.id,
    name: definition.name,
    label: definition.label,
    kind: definition.kind,
    ...(definition.settings.options ? { options: definition.settings.options } : {}),
    ...(definition.settings.currency ? { currency: definition.settings.currency } : {}),
  };
}

type CheckableField = WritableField & { repeater?: boolean };

/**
 * Each list of fields checked against, by name with its kind's spec: made once per list,
 * not once per values object (an import checks 50,000 rows against one list).
 */
const specsOf = new WeakMap<
  readonly CheckableField[],
  Map<string, { field: CheckableField; spec: KindSpec }>
>();

/** `fields` by name, each beside the spec its values are judged by. */
export function fieldsByName(fields: readonly CheckableField[]) {
  let byName = specsOf.get(fields);
  if (!byName) {
    byName = new Map(
      fields.map((field) => [
        field.name,
        {
          field,
          spec: {
            kind: field.kind as Kind,
            ...(field.options ? { options: field.options } : {}),
            ...(field.currency ? { currency: field.currency } : {}),
          },
        },
      ]),
    );
    specsOf.set(fields, byName);
  }
  return byName;
}

/**
 * Judges a values object against the live fields (repeaters among them, to refuse them
 * by name): the stored forms, or the refusal. Nothing is written.
 */
export function checkValues(
  fields: readonly CheckableField[],
  values: unknown,
): CheckedFieldValues | AppError {
  if (!isPlainObject(values)) return refuse('values_not_an_object');
  const byName = fieldsByName(fields);
  const names = Object.keys(values);
  const unknown = names.filter((name) => !byName.has(name));
  if (unknown.length > 0)
    return refuse('field_unknown', { fields: unknown.slice(0, NAMES_LISTED) });
  const repeater = names.find((name) => byName.get(name)!.field.repeater);
  if (repeater) return refuse('field_repeater_entries_only', { field: repeater });
  const checked: { field: WritableField; value: unknown }[] = [];
  for (const name of names) {
    const { field, spec } = byName.get(name)!;
    const judged = judgeValue(spec, values[name]);
    if (!judged.ok) return refuse('value_kind_mismatch', { field: name, kind: field.kind });
    checked.push({ field, value: judged.value });
  }
  return { values: checked };
}

/** The live definitions as the value checks take them (repeaters marked). */
export function checkable(definitions: readonly FieldDefinition[]) {
  return definitions.map((definition) => ({
    ...writableField(definition),
    repeater: definition.kind === 'repeater',
  }));
}

/** Rows one statement writes at most. */
const WRITE_BATCH = 2_000;

/**
 * Writes checked values of many contacts in `tx`, in batched statements: non-null ones
 * stored (replacing the old), null ones cleared, and an event per contact unless `event`
 * is false.
 */
export async function writeValuesMany(
  tx: Db,
  input: Parameters<FieldsService['writeValuesMany']>[1],
): Promise<void> {
  const { workspaceId } = input;
  const cells = input.writes.flatMap(({ contactId, checked }) =>
    checked.values.map(({ field, value }) => ({ contactId, fieldId: field.id, value })),
  );
  const stored = cells.filter(({ value }) => value !== null);
  if (input.fresh) {
    // New contacts hold no value: nothing to replace or clear, so COPY writes them.
    await copyRows(
      tx,
      'contact_field_values',
      ['workspace_id', 'contact_id', 'field_id', 'value'],
      stored.map((cell) => [workspaceId, cell.contactId, cell.fieldId, JSON.stringify(cell.value)]),
    );
  }
  for (let i = 0; !input.fresh && i < stored.length; i += WRITE_BATCH) {
    // One JSON parameter a batch: the database reads the rows, no statement of 6,000 values.
    await tx.execute(sql`
      insert into contact_field_values (workspace_id, contact_id, field_id, value)
      select ${workspaceId}, cell."contactId", cell."fieldId", cell.value
      from jsonb_to_recordset(${JSON.stringify(stored.slice(i, i + WRITE_BATCH))}::jsonb)
        as cell("contactId" uuid, "fieldId" uuid, value jsonb)
      on conflict (workspace_id, contact_id, field_id)
        do update set value = excluded.value, updated_at = now()`);
  }
  const cleared = input.fresh ? [] : cells.filter(({ value }) => value === null);
  for (let i = 0; i < cleared.length; i += WRITE_BATCH) {
    const batch = cleared.slice(i, i + WRITE_BATCH);
    await tx.execute(sql`
      delete from contact_field_values using jsonb_to_recordset(${JSON.stringify(batch)}::jsonb)
        as gone("contactId" uuid, "fieldId" uuid)
      where workspace_id = ${workspaceId} and contact_id = gone."contactId"
        and field_id = gone."fieldId"`);
  }
  if (input.event === false) return;
  for (const { contactId, checked } of input.writes) {
    if (checked.values.length === 0) continue;
    await recordEvent(tx, {
      workspaceId,
      name: FIELDS_CHANGED,
      subjectId: contactId,
      actorUserId: input.actorUserId,
      data: { fields: checked.values.map(({ field }) => field.name) },
    });
  }
}

/**
 * Fills checked values of many contacts in `tx` where the contact holds none for the
 * field: a stored value wins, and of two writes naming one contact's field the first
 * does (a merge's rule, docs/fields.md). Null values fill nothing. Batched statements;
 * `contact.fields_changed` per contact filled unless `event` is false. Answers each
 * contact that gained a value with the fields it gained, in the writes' order.
 */
export async function fillValuesMany(
  tx: Db,
  input: Parameters<FieldsService['fillValuesMany']>[1],
): Promise<{ contactId: string; fields: string[] }[]> {
  const { workspaceId } = input;
  const seen = new Set<string>();
  const cells: { contactId: string; fieldId: string; value: unknown }[] = [];
  const names = new Map<string, string>();
  for (const { contactId, checked } of input.writes) {
    for (const { field, value } of checked.values) {
      const key = `${contactId}/${field.id}`;
      if (value === null || seen.has(key)) continue;
      seen.add(key);
      names.set(field.id, field.name);
      cells.push({ contactId, fieldId: field.id, value });
    }
  }
  const filled = new Map<string, string[]>();
  for (let i = 0; i < cells.length; i += WRITE_BATCH) {
    const written = await tx.execute<{ contactId: string; fieldId: string }>(sql`
      insert into contact_field_values (workspace_id, contact_id, field_id, value)
      select ${workspaceId}, cell."contactId", cell."fieldId", cell.value
      from jsonb_to_recordset(${JSON.stringify(cells.slice(i, i + WRITE_BATCH))}::jsonb)
        as cell("contactId" uuid, "fieldId" uuid, value jsonb)
      on conflict (workspace_id, contact_id, field_id) do nothing
      returning contact_id as "contactId", field_id as "fieldId"`);
    for (const { contactId, fieldId } of written) {
      const fields = filled.get(contactId) ?? [];
      fields.push(names.get(fieldId)!);
      filled.set(contactId, fields);
    }
  }
  const answer = [...filled].map(([contactId, fields]) => ({ contactId, fields }));
  if (input.event === false) return answer;
  for (const { contactId, fields } of answer) {
    await recordEvent(tx, {
      workspaceId,
      name: FIELDS_CHANGED,
      subjectId: contactId,
      actorUserId: input.actorUserId,
      data: { fields },
    });
  }
  return answer;
}

/**
 * Writes the values a select stages (`contact_id`, `field_id`, `value`, none null) in one
 * statement: plain inserts for contacts created in `tx`, or with `fill` only where the
 * contact holds none for the field (`fillValuesMany`'s rule: the select's first row for a
 * contact's field fills it). No event: the caller records its own summary.
 */
export async function writeValuesFrom(
  tx: Db,
  input: Parameters<NonNullable<FieldsService['writeValuesFrom']>>[1],
): Promise<void> {
  await tx.execute(sql`
    insert into contact_field_values (workspace_id, contact_id, field_id, value)
    select ${input.workspaceId}, staged.contact_id, staged.field_id, staged.value
    from (${input.values}) as staged
    ${input.fill ? sql`on conflict (workspace_id, contact_id, field_id) do nothing` : sql``}`);
}

/**
 * Writes checked values of one contact in `tx` (`writeValuesMany` for a single contact):
 * `contact.fields_changed` recorded when anything was named, unless `event` is false.
 */
export function writeValues(
  tx: Db,
  input: Parameters<FieldsService['writeValues']>[1],
): Promise<void> {
  const { contactId, checked, ...rest } = input;
  return writeValuesMany(tx, { ...rest, writes: [{ contactId, checked }] });
}

/**
 * `writeContactFields`: every value judged before anything is written, so a refused one
 * leaves every stored value as it was.
 */
export async function writeContactFields(
  ctx: Context,
  contactId: string,
  values: unknown,
): Promise<{ id: string; name: string }> {
  const { workspaceId, actor } = signedIn(ctx);
  const checked = checkValues(checkable(await liveDefinitions(ctx)), values);
  if (checked instanceof AppError) throw checked;
  const contact = await ctx.database.db.transaction(async (tx) => {
    const found = await findContactRef(tx, workspaceId, contactId);
    if (!found) throw refuse('contact_not_found');
    await writeValues(tx, { workspaceId, contactId, actorUserId: actor.userId, checked });
    return found;
  });
  ctx.loaders.of(valueLoaders).values.clear(contactId);
  return contact;
}

/** The live repeater named `name`, or the refusal naming why there is none. */
async function repeaterNamed(ctx: Context, name: string): Promise<FieldDefinition> {
  const definition = (await liveDefinitions(ctx)).find((d) => d.name === name);
  if (!definition) throw refuse('field_unknown', { fields: [name] });
  if (definition.kind !== 'repeater') throw refuse('field_not_a_repeater', { field: name });
  return definition;
}

/**
 * An entry's cells judged by the repeater's sub fields; blank cells are left out, and an
 * entry whose every cell is blank is refused.
 */
function judgeCells(definition: FieldDefinition, cells: unknown): Record<string, unknown> {
  if (!isPlainObject(cells)) throw refuse('values_not_an_object');
  const subFields = new Map((definition.settings.subFields ?? []).map((sub) => [sub.name, sub]));
  const unknown = Object.keys(cells).filter((name) => !subFields.has(name));
  if (unknown.length > 0) throw refuse('field_unknown', { fields: unknown.slice(0, NAMES_LISTED) });
  const judged: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(cells)) {
    const sub = subFields.get(name)!;
    const result = judgeValue(subFieldSpec(sub), raw);
    if (!result.ok) {
      throw refuse('value_kind_mismatch', { field: `${definition.name}.${name}`, kind: sub.kind });
    }
    if (result.value !== null) judged[name] = result.value;
  }
  if (Object.keys(judged).length === 0) throw refuse('field_entry_empty');
  return judged;
}

/**
 * Serialises the entry writes of one contact's repeater: the count under the cap and the
 * insert see one state, so concurrent adds stop exactly at SVC_FIELDS_ENTRIES_MAX.
 */
async function lockEntries(tx: Db, fieldId: string, contactId: string): Promise<void> {
  await tx.execute(
    sql`select pg_advisory_xact_lock(hashtext(${`fields:${fieldId}:${contactId}`}))`,
  );
}

function entryOf(row: FieldEntryRow): Entry {
  return { ...row.cells, id: row.id };
}

/** What the entry mutations answer: the entry, its contact and its field. */
export interface EntryResult {
  contactId: string;
  field: string;
  entry: Entry;
}

async function recordEntryChange(
  tx: Db,
  ctx: Context,
  contactId: string,
  definition: FieldDefinition,
) {
  const { workspaceId, actor } = signedIn(ctx);
  await recordEvent(tx, {
    workspaceId,
    name: FIELDS_CHANGED,
    subjectId: contactId,
    actorUserId: actor.userId,
    data: { fields: [definition.name] },
  });
}

export async function addContactFieldEntry(
  ctx: Context,
  input: { contactId: string; field: string; values: unknown },
): Promise<EntryResult> {
  const { workspaceId } = signedIn(ctx);
  const definition = await repeaterNamed(ctx, input.field);
  const cells = judgeCells(definition, input.values);
  const max = ctx.config.fields.entriesMax;
  const row = await ctx.database.db.transaction(async (tx) => {
    if (!(await contactExists(tx, workspaceId, input.contactId))) throw refuse('contact_not_found');
    await lockEntries(tx, definition.id, input.contactId);
    const [counted] = await tx
      .select({ count: sql<number>`count(*)::int` })
      .from(contactFieldEntries)
      .where(entriesOf(workspaceId, input.contactId, definition.id));
    if ((counted?.count ?? 0) >= max) throw refuse('field_entries_full', { max });
    const [added] = await tx
      .insert(contactFieldEntries)
      .values({ workspaceId, contactId: input.contactId, fieldId: definition.id, cells })
      .returning();
    await recordEntryChange(tx, ctx, input.contactId, definition);
    return added!;
  });
  ctx.loaders.of(valueLoaders).entries.clear(input.contactId);
  return { contactId: input.contactId, field: definition.name, entry: entryOf(row) };
}

function entriesOf(workspaceId: string, contactId: string, fieldId: string) {
  return and(
    eq(contactFieldEntries.workspaceId, workspaceId),
    eq(contactFieldEntries.contactId, contactId),
    eq(contactFieldEntries.fieldId, fieldId),
  );
}

/** `updateContactFieldEntry`: the named cells replaced (null clears one), the rest kept. */
export async function updateContactFieldEntry(
  ctx: Context,
  input: { contactId: string; field: string; entryId: string; values: unknown },
): Promise<EntryResult> {
  const { workspaceId } = signedIn(ctx);
  const definition = await repeaterNamed(ctx, input.field);
  if (!isPlainObject(input.values)) throw refuse('values_not_an_object');
  const changes = input.values;
  const row = await ctx.database.db.transaction(async (tx) => {
    const [current] = await tx
      .select()
      .from(contactFieldEntries)
      .where(
        and(
          entriesOf(workspaceId, input.contactId, definition.id),
          eq(contactFieldEntries.id, input.entryId),
        ),
      )
      .for('update');
    if (!current) throw refuse('field_entry_not_found');
    const cells = judgeCells(definition, { ...current.cells, ...changes });
    const [updated] = await tx
      .update(contactFieldEntries)
      .set({ cells })
      .where(
        and(
          eq(contactFieldEntries.workspaceId, workspaceId),
          eq(contactFieldEntries.id, current.id),
        ),
      )
      .returning();
    await recordEntryChange(tx, ctx, input.contactId, definition);
    return updated!;
  });
  ctx.loaders.of(valueLoaders).entries.clear(input.contactId);
  return { contactId: input.contactId, field: definition.name, entry: entryOf(row) };
}

/** `deleteContactFieldEntry`: answers the deleted entry's id. */
export async function deleteContactFieldEntry(
  ctx: Context,
  input: { contactId: string; field: string; entryId: string },
): Promise<string> {
  const { workspaceId } = signedIn(ctx);
  const definition = await repeaterNamed(ctx, input.field);
  await ctx.database.db.transaction(async (tx) => {
    const [deleted] = await tx
      .delete(contactFieldEntries)
      .where(
        and(
          entriesOf(workspaceId, input.contactId, definition.id),
          eq(contactFieldEntries.id, input.entryId),
        ),
      )
      .returning({ id: contactFieldEntries.id });
    if (!deleted) throw refuse('field_entry_not_found');
    await recordEntryChange(tx, ctx, input.contactId, definition);
  });
  ctx.loaders.of(valueLoaders).entries.clear(input.contactId);
  return input.entryId;
}

/** The stored values of `contactIds` (of `fieldIds` only, when given): one statement. */
export function selectValues(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
  fieldIds?: readonly string[],
) {
  return db
    .select({
      contactId: contactFieldValues.contactId,
      fieldId: contactFieldValues.fieldId,
      value: contactFieldValues.value,
    })
    .from(contactFieldValues)
    .where(
      and(
        eq(contactFieldValues.workspaceId, workspaceId),
        inArray(contactFieldValues.contactId, [...contactIds]),
        fieldIds ? inArray(contactFieldValues.fieldId, [...fieldIds]) : undefined,
      ),
    );
}

/**
 * A request's value loaders: every value of every contact of a page in one read, and every
 * repeater entry of them in another (read only when a repeater is asked for).
 */
export function valueLoaders(db: Db, workspaceId: string) {
  return {
    values: loaderFamily(
      (ids) => selectValues(db, workspaceId, ids),
      (row) => row.contactId,
    )(),
    entries: loaderFamily(
      (ids) =>
        db
          .select()
          .from(contactFieldEntries)
          .where(
            and(
              eq(contactFieldEntries.workspaceId, workspaceId),
              inArray(contactFieldEntries.contactId, [...ids]),
            ),
          )
          .orderBy(asc(contactFieldEntries.createdAt), asc(contactFieldEntries.id)),
      (row) => row.contactId,
    )(),
  };
}

/** One field's value of a contact as read: the stored JSON, a repeater's entries, or null. */
export async function readField(
  ctx: Context,
  contactId: string,
  definition: FieldDefinition,
): Promise<unknown> {
  const loaders = ctx.loaders.of(valueLoaders);
  if (definition.kind === 'repeater') {
    const rows = await loaders.entries.load(contactId);
    return rows.filter((row) => row.fieldId === definition.id).map(entryOf);
  }
  const rows = await loaders.values.load(contactId);
  return rows.find((row) => row.fieldId === definition.id)?.value ?? null;
}

/** `Contact.field(name)`: one live field's value; an unknown name is refused. */
export async function contactField(ctx: Context, contactId: string, name: string) {
  const definition = (await liveDefinitions(ctx)).find((d) => d.name === name);
  if (!definition) throw refuse('field_unknown', { fields: [name] });
  return readField(ctx, contactId, definition);
}

/** `Contact.fieldValues`: every live field that holds a value, by name, in order. */
export async function contactFieldValuesOf(ctx: Context, contactId: string) {
  const definitions = await liveDefinitions(ctx);
  const values: Record<string, unknown> = {};
  const read = await Promise.all(definitions.map((d) => readField(ctx, contactId, d)));
  definitions.forEach((definition, i) => {
    const value = read[i];
    if (
      value !== null &&
      !(Array.isArray(value) && definition.kind === 'repeater' && value.length === 0)
    ) {
      values[definition.name] = value;
    }
  });
  return values;
}
