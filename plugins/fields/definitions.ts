// Field definitions: the rules of SPEC 2.7, and the per-workspace list every value write
// and read judges against, held in the process's workspace cache.
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import {
  checkText,
  perWorkspace,
  refuse,
  signedIn,
  type CacheScope,
  type Context,
  type Db,
} from '../../src/plugin-sdk/index.js';
import { isCurrency, isKind, type Kind, type KindSpec } from './kinds.js';
import {
  fieldDefinitions,
  type FieldDefinition,
  type FieldSettings,
  type SubField,
} from './tables.js';

export const LABEL_MAX = 100;
export const NAME_MAX = 64;
export const OPTION_MAX = 100;
export const OPTIONS_MAX = 100;
export const SUB_FIELDS_MAX = 20;
/** Live definitions a workspace may hold. */
export const DEFINITIONS_MAX = 200;

/** Names no field may take: the core Contact's own, and what a reader could mistake for them. */
const ALWAYS_RESERVED = [
  'id',
  'name',
  'createdAt',
  'updatedAt',
  'deletedAt',
  'identities',
  'identity',
  'tasks',
  'field',
  'fields',
  'fieldValues',
  'email',
  'phone',
  'workspace',
  'workspaceId',
  'contact',
  'contactId',
  'owner',
  'ownerId',
  'typename',
];

/**
 * The reserved names: the fixed list and every field the Contact type has in this
 * deployment's schema (plugins' fields such as `notes` included), sorted.
 */
export function reservedNames(contactFields: Iterable<string>): string[] {
  return [...new Set([...ALWAYS_RESERVED, ...contactFields])].sort();
}

const camelCase = /^[a-z][a-zA-Z0-9]*$/;

/** Every definition of a workspace, archived too, in the order `fields` lists them. */
export const definitionsOf = perWorkspace<FieldDefinition[]>(
  'fields.definitions',
  (db, workspaceId) =>
    db
      .select()
      .from(fieldDefinitions)
      .where(eq(fieldDefinitions.workspaceId, workspaceId))
      .orderBy(asc(fieldDefinitions.position), asc(fieldDefinitions.createdAt)),
);

/** A workspace's live definitions, in order. */
export async function liveDefinitionsOf(
  scope: CacheScope,
  workspaceId: string,
): Promise<FieldDefinition[]> {
  const all = await definitionsOf.get(scope, workspaceId);
  return all.filter((definition) => definition.archivedAt === null);
}

/** The caller's workspace's live definitions, in order. */
export function liveDefinitions(ctx: Context): Promise<FieldDefinition[]> {
  return liveDefinitionsOf(ctx, signedIn(ctx).workspaceId);
}

export async function listFields(ctx: Context, includeArchived: boolean) {
  const all = await definitionsOf.get(ctx, signedIn(ctx).workspaceId);
  return includeArchived ? all : all.filter((definition) => definition.archivedAt === null);
}

export interface SubFieldInput {
  name: string;
  label: string;
  kind: string;
  options?: readonly string[] | null;
  currency?: string | null;
}

export interface DefineFieldInput extends SubFieldInput {
  subFields?: readonly SubFieldInput[] | null;
}

/** The kind spec of a definition (what judging its values needs). */
export function specOf(definition: FieldDefinition): KindSpec {
  return {
    kind: definition.kind as Kind,
    ...(definition.settings.options ? { options: definition.settings.options } : {}),
    ...(definition.settings.currency ? { currency: definition.settings.currency } : {}),
  };
}

function label(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) throw refuse('field_label_required');
  if ([...trimmed].length > LABEL_MAX) throw refuse('field_label_too_long', { max: LABEL_MAX });
  return checkText(trimmed, 'label', LABEL_MAX);
}

/**
 * What two options of one field may not share (docs/fields.md, "Select options"): the same
 * text once compatibility forms are folded (NFKC: fullwidth ａ is a, ﬁ is fi) and case
 * ignored. Letters of different scripts that look alike (Latin a, Cyrillic а) stay distinct
 * options: see docs/decisions.md.
 */
export function optionKey(option: string): string {
  return option.normalize('NFKC').toLowerCase();
}

/** Options and currency: only the kinds that take them, each checked. */
function kindSettings(
  input: SubFieldInput,
  kind: Kind,
): Pick<FieldSettings, 'options' | 'currency'> {
  const selects = kind === 'select' || kind === 'multi_select';
  const givenOptions = input.options ?? null;
  if (!selects && givenOptions !== null)
    throw refuse('field_setting_unexpected', { setting: 'options' });
  if (kind !== 'currency' && input.currency != null) {
    throw refuse('field_setting_unexpected', { setting: 'currency' });
  }
  if (selects) {
    if (!givenOptions || givenOptions.length === 0) throw refuse('field_options_required');
    // Stored composed (NFC): é typed as e + ◌́ is the é another keyboard types.
    const options = givenOptions.map((option) => option.trim().normalize('NFC'));
    const seen = new Set<string>();
    for (const option of options) {
      const key = optionKey(option);
      if (option === '' || [...option].length > OPTION_MAX || seen.has(key)) {
        throw refuse('field_option_invalid', { option });
      }
      seen.add(key);
      checkText(option, 'options', OPTION_MAX);
    }
    return { options };
  }
  if (kind === 'currency') {
    const currency = input.currency?.trim().toUpperCase() ?? '';
    if (!isCurrency(currency)) throw refuse('field_currency_invalid');
    return { currency };
  }
  return {};
}

function subField(input: SubFieldInput, seen: Set<string>): SubField {
  const name = input.name.trim();
  if (!camelCase.test(name) || name.length > NAME_MAX) throw refuse('field_sub_field_name_invalid');
  if (name === 'id') throw refuse('field_sub_field_name_reserved');
  if (seen.has(name)) throw refuse('field_sub_field_name_taken', { name });
  seen.add(name);
  const kind = input.kind.trim();
  if (!isKind(kind)) throw refuse('field_kind_unknown');
  if (kind === 'repeater') throw refuse('field_sub_field_nested');
  return { name, label: label(input.label), kind, ...kindSettings(input, kind) };
}

/** A definition as stored, every rule of SPEC 2.7 checked but the name's availability. */
export function parseDefinition(input: DefineFieldInput, reserved: ReadonlySet<string>) {
  const name = input.name.trim();
  if (!camelCase.test(name) || name.length > NAME_MAX) throw refuse('field_name_malformed');
  const fieldLabel = label(input.label);
  const kind = input.kind.trim();
  if (!isKind(kind)) throw refuse('field_kind_unknown');
  if (reserved.has(name)) throw refuse('field_name_reserved');
  const given = input.subFields ?? [];
  if (kind === 'repeater' && given.length === 0) throw refuse('field_sub_fields_required');
  if (kind !== 'repeater' && given.length > 0) throw refuse('field_sub_fields_unexpected');
  const seen = new Set<string>();
  const settings: FieldSettings =
    kind === 'repeater'
      ? { subFields: given.map((sub) => subField(sub, seen)) }
      : kindSettings(input, kind);
  return { name, label: fieldLabel, kind, settings };
}

/** What an archived definition pins: its kind, and its sub fields' names and kinds. */
function shape(kind: string, settings: FieldSettings): string {
  return JSON.stringify([kind, (settings.subFields ?? []).map((sub) => [sub.name, sub.kind])]);
}

/**
 * Serialises a workspace's definition writes: the name check, the cap and the positions
 * see one state. Held until the transaction ends.
 */
async function lockDefinitions(tx: Db, workspaceId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`fields:${workspaceId}`}))`);
}

/** Runs a definition write, then announces it to every process (NOTIFY at commit). */
async function writeDefinitions<T>(
  ctx: Context,
  write: (tx: Db, workspaceId: string) => Promise<T>,
): Promise<T> {
  const { workspaceId } = signedIn(ctx);
  const result = await ctx.database.db.transaction(async (tx) => {
    await lockDefinitions(tx, workspaceId);
    const written = await write(tx, workspaceId);
    await definitionsOf.changed(tx, workspaceId);
    return written;
  });
  definitionsOf.forget(ctx, workspaceId);
  return result;
}

function selectDefinitions(tx: Db, workspaceId: string) {
  return tx
    .select()
    .from(fieldDefinitions)
    .where(eq(fieldDefinitions.workspaceId, workspaceId))
    .orderBy(asc(fieldDefinitions.position), asc(fieldDefinitions.createdAt));
}

/**
 * `defineField`: a new definition at the end of the list, or an archived one of the same
 * name taken back (its values return with it) when its kind and sub fields are the same.
 */
export async function defineField(
  ctx: Context,
  input: DefineFieldInput,
  reserved: ReadonlySet<string>,
): Promise<FieldDefinition> {
  const parsed = parseDefinition(input, reserved);
  return writeDefinitions(ctx, async (tx, workspaceId) => {
    const all = await selectDefinitions(tx, workspaceId);
    const held = all.find((definition) => definition.name === parsed.name);
    if (held && held.archivedAt === null) throw refuse('field_name_taken');
    if (held && shape(held.kind, held.settings) !== shape(parsed.kind, parsed.settings)) {
      throw refuse('field_kind_locked');
    }
    const live = all.filter((definition) => definition.archivedAt === null).length;
    if (live >= DEFINITIONS_MAX) throw refuse('field_definitions_full', { max: DEFINITIONS_MAX });
    const position = all.reduce((last, definition) => Math.max(last, definition.position + 1), 0);
    if (held) {
      const [taken] = await tx
        .update(fieldDefinitions)
        .set({ label: parsed.label, settings: parsed.settings, position, archivedAt: null })
        .where(and(eq(fieldDefinitions.workspaceId, workspaceId), eq(fieldDefinitions.id, held.id)))
        .returning();
      return taken!;
    }
    const [created] = await tx
      .insert(fieldDefinitions)
      .values({ workspaceId, ...parsed, position })
      .returning();
    return created!;
  });
}

/** `archiveField`: the live definition archived; its values stay for when it is taken back. */
export async function archiveField(ctx: Context, id: string): Promise<FieldDefinition> {
  return writeDefinitions(ctx, async (tx, workspaceId) => {
    const [archived] = await tx
      .update(fieldDefinitions)
      .set({ archivedAt: new Date() })
      .where(
        and(
          eq(fieldDefinitions.workspaceId, workspaceId),
          eq(fieldDefinitions.id, id),
          isNull(fieldDefinitions.archivedAt),
        ),
      )
      .returning();
    if (!archived) throw refuse('field_not_found');
    return archived;
  });
}

/** `orderFields`: `ids` must be exactly the live definitions, each once; they take 0…n−1. */
export async function orderFields(
  ctx: Context,
  ids: readonly string[],
): Promise<FieldDefinition[]> {
  return writeDefinitions(ctx, async (tx, workspaceId) => {
    const live = (await selectDefinitions(tx, workspaceId)).filter((d) => d.archivedAt === null);
    const asked = new Set(ids);
    if (
      asked.size !== ids.length ||
      ids.length !== live.length ||
      live.some((d) => !asked.has(d.id))
    ) {
      throw refuse('field_order_incomplete');
    }
    const byId = new Map(live.map((definition) => [definition.id, definition]));
    await tx.execute(sql`
      update field_definitions set position = ordered.position - 1
      from unnest(${`{${ids.join(',')}}`}::uuid[]) with ordinality as ordered(id, position)
      where field_definitions.workspace_id = ${workspaceId} and field_definitions.id = ordered.id`);
    return ids.map((id, position) => ({ ...byId.get(id)!, position }));
  });
}
