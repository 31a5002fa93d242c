// Judging an import's staged rows through its mapping (SPEC 2.10's reasons, docs/importer.md):
// each row's blocking reason, or the contact it creates or merges into, and the plan the
// commit writes from it. A batch of rows is held at a time; what a row leaves for later
// rows is kept per address.
import { randomUUID } from 'node:crypto';
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import {
  AppError,
  findService,
  IDENTITIES_PER_CONTACT,
  identityCounts,
  identityHolders,
  identityKey,
  prepareContact,
  splitListCell,
  type CheckedFieldValues,
  type Db,
  type FieldsService,
  type NewContact,
  type WritableField,
} from '../../src/plugin-sdk/index.js';
import {
  importRows,
  type Import,
  type ImportRow,
  type PlannedAddress,
  type RowPlan,
  type RowReason,
  type RowReasonCode,
} from './tables.js';

/**
 * Reasons the file gave a row when it was read: those that leave it out stay, whatever the
 * mapping. Every other reason is the last judgement's, judged again from the cells.
 */
const FROM_THE_FILE = new Set(['row_quote_misplaced', 'row_malformed', 'legacy_text']);
/** A reason of the file that still imports. */
const IMPORTS_ANYWAY = new Set(['row_cell_count_mismatch']);

/** Rows judged (and their judgements stored) per batch. */
const BATCH = 2_000;

/** What a row holding an existing contact's address does (`importSetMapping`). */
export type ExistingContacts = 'skip' | 'merge';

/** What the commit will do with a row (a committed import's rows read it as `created`…). */
export type RowOutcome = 'create' | 'merge' | 'skip';

/**
 * A row of the file that creates a contact, as later merging rows see it: its line, its
 * name, and the id its contact is given. Kept per address it claims, in place of the row
 * itself, so judging holds one batch of rows at a time.
 */
interface FileContact {
  line: number;
  name: string;
  contactId: string;
}

/** A contact a merging row goes into: one of the workspace's, or an earlier row's. */
type MergeTarget = { contactId: string; name: string } | { row: FileContact };

/** A staged row read through the mapping. */
interface Judged {
  line: number;
  reason: RowReason;
  contactId: string | null;
  /** contactId names a contact the commit creates (the row's own, or an earlier row's). */
  planned: boolean;
  outcome: RowOutcome;
  contact?: NewContact;
  /** The row's custom field values as checked when judged (written as they are). */
  checked?: CheckedFieldValues;
  /** For a row creating a contact (merge): what later rows see of it. */
  creates?: FileContact;
  /** For `identity_taken`: the contact the earlier row of the file holding the address creates. */
  heldBy?: string;
  /** For a merge: the contact it goes into, and the identities of the row it adds. */
  mergeInto?: MergeTarget;
  adds?: NewContact['identities'][number][];
  /** What the commit writes of the row, and what its judgement rests on (null: its cells alone). */
  plan?: RowPlan | null;
}

const reason = (code: RowReasonCode, meta: Record<string, unknown> = {}): RowReason => ({
  code,
  meta,
});

/**
 * Judges an import's rows through the mapping a batch at a time, in file order: each row's
 * blocking reason, or the contact and values it will write, or (`existing` is merge) the
 * contact it merges into. What a row leaves for later rows (the addresses it claims, the
 * contacts it merges into) is kept between batches, one entry per address, never the rows.
 * Addresses held in the workspace are read per batch through `lookup`, which must not see
 * the contacts the commit writes (the file's own are judged by what it claims).
 */
class RowJudge {
  /**
   * skip: per channel, each address's first row of the file as the id of the contact it
   * creates (null: a row that creates nothing). An id is all that is kept an address, the
   * largest part of what judging holds: a commit reads back the name of a contact it
   * names (`heldInFile`).
   */
  private readonly inFile = new Map<string, Map<string, string | null>>();
  /** merge: the workspace's contacts met so far, and the target each address claims. */
  private readonly existing = new Map<string, MergeTarget>();
  private readonly claimed = new Map<string, MergeTarget>();
  /** merge: how many identities each target holds, counting what rows add to it. */
  private readonly held = new Map<MergeTarget, number>();
  /** merge: how many identities each of the workspace's contacts met held when first met. */
  private readonly heldBefore = new Map<string, number>();
  private readonly fieldService = findService('fields');
  /** Each column's target, read once: the name, an address's channel, a field's name. */
  private readonly targets: readonly ({ to: 'name' | 'identity' | 'field'; name: string } | null)[];

  constructor(
    private readonly lookup: Db,
    private readonly workspaceId: string,
    mapping: readonly (string | null)[],
    private readonly fields: readonly WritableField[],
    private readonly mode: ExistingContacts,
  ) {
    this.targets = mapping.map((target) => {
      if (!target) return null;
      if (target === 'name') return { to: 'name', name: '' };
      if (target.startsWith('identity:')) {
        return { to: 'identity', name: target.slice('identity:'.length) };
      }
      return { to: 'field', name: target.slice('field:'.length) };
    });
  }

  async judge(rows: readonly StagedRow[]): Promise<Judged[]> {
    const judged = rows.map((row) => this.alone(row));
    const candidates = judged.filter((row) => row.contact);
    // Judging against the workspace clears a skipped or merging row's contact: kept for its plan.
    const prepared = candidates.map((row) => row.contact!);
    const keys = (row: Judged) => row.contact!.identities.map(identityKey);
    const holders = await identityHolders(
      this.lookup,
      this.workspaceId,
      candidates.flatMap((row) => row.contact!.identities),
    );
    if (this.mode === 'merge') {
      const met = [...holders.values()]
        .map((holder) => holder.contactId)
        .filter((id) => !this.existing.has(id));
      const counts = await identityCounts(this.lookup, this.workspaceId, met);
      for (const row of candidates) this.merge(row, keys(row), holders, counts);
    } else for (const row of candidates) this.skip(row, keys(row), holders);
    candidates.forEach((row, i) => (row.plan = this.planOf(row, prepared[i]!, holders)));
    return judged;
  }

  /**
   * What the commit writes of a row judged against the workspace (its contact, or what it
   * adds to one), and what the judgement rests on: each address's holder then, which the
   * commit checks again before it trusts the plan.
   */
  private planOf(row: Judged, contact: NewContact, holders: Holders): RowPlan {
    const adds = row.adds && new Set(row.adds.map(identityKey));
    const addresses = contact.identities.map((identity): PlannedAddress => {
      const key = identityKey(identity);
      const holder = holders.get(key);
      return {
        channel: identity.channel,
        identifier: identity.identifier,
        identifierKey: identity.identifierKey,
        displayName: identity.displayName,
        ...(holder && { holder: holder.contactId, holderName: holder.contactName }),
        ...(holder &&
          this.mode === 'merge' && { holderCount: this.heldBefore.get(holder.contactId) }),
        ...(adds?.has(key) && { add: true as const }),
      };
    });
    const values = row.outcome !== 'skip' && row.checked ? storedValues(row.checked) : undefined;
    return {
      ...(row.outcome === 'create' && { name: contact.name }),
      addresses,
      ...(values && { values }),
    };
  }

  /** A row judged on its own cells: a blocking reason, or the contact and values. */
  private alone(row: StagedRow): Judged {
    // A legacy text reason blocks as any other reason of its time did.
    const stored =
      typeof row.reason === 'string' ? reason('legacy_text', { text: row.reason }) : row.reason;
    const structural = stored && FROM_THE_FILE.has(stored.code) ? stored : null;
    if (structural || row.cells.length === 0) {
      return skipped(row.line, structural ?? reason('row_malformed'));
    }
    let name = '';
    const identities: { channel: string; identifier: string }[] = [];
    let values: Record<string, string> | null = null;
    for (let i = 0; i < this.targets.length; i += 1) {
      const target = this.targets[i];
      if (!target) continue;
      const cell = (row.cells[i] ?? '').trim();
      if (cell === '') continue;
      if (target.to === 'name') name = cell;
      else if (target.to === 'identity') {
        // Several addresses of a channel share a cell as a list (`a; b`), as an export writes them.
        for (const identifier of splitListCell(cell)) {
          identities.push({ channel: target.name, identifier });
        }
      } else (values ??= Object.create(null) as Record<string, string>)[target.name] = cell;
    }
    if (name === '' || identities.length === 0) {
      return skipped(row.line, reason('row_incomplete'));
    }
    const contact = prepareContact({ name, identities });
    if (contact instanceof AppError) {
      return skipped(row.line, reason('contact_details_invalid'));
    }
    let checked: CheckedFieldValues | undefined;
    if (this.fieldService && values) {
      const result = checkCells(this.fieldService, this.fields, values);
      const fieldReason = valuesReason(result);
      if (fieldReason) return skipped(row.line, fieldReason);
      checked = result as CheckedFieldValues;
    }
    const kept = stored && IMPORTS_ANYWAY.has(stored.code) ? stored : null;
    // The id the last mapping planned for the row's contact, so a commit judging the row
    // as the mapping did leaves it as stored.
    const planned = row.contactPlanned && row.outcome === 'create' ? row.contactId : null;
    return {
      line: row.line,
      reason: kept,
      contactId: planned ?? randomUUID(),
      planned: true,
      outcome: 'create',
      contact,
      ...(checked ? { checked } : {}),
    };
  }

  /**
   * SPEC 2.10: a row holding an address a contact of the workspace holds is left out as
   * `identity_taken_by`, one holding an address an earlier row holds as `identity_taken`.
   */
  private skip(row: Judged, keys: readonly string[], holders: Holders): void {
    const identities = row.contact!.identities;
    const holder = keys.map((key) => holders.get(key)).find(Boolean);
    let earlier: string | null | undefined;
    for (const { channel, identifierKey } of identities) {
      earlier = this.inFile.get(channel)?.get(identifierKey);
      if (earlier !== undefined) break;
    }
    if (holder) {
      Object.assign(row, {
        reason: reason('identity_taken_by', { ownerName: holder.contactName }),
        contactId: holder.contactId,
        planned: false,
        contact: undefined,
        checked: undefined,
        outcome: 'skip',
      });
    } else if (earlier !== undefined) {
      Object.assign(row, {
        reason: reason('identity_taken'),
        // The earlier row's contact, once a commit creates it, holds the address.
        contactId: earlier,
        planned: earlier !== null,
        contact: undefined,
        checked: undefined,
        outcome: 'skip',
      });
      if (earlier) row.heldBy = earlier;
    }
    const seen = row.contact ? row.contactId : null;
    for (const { channel, identifierKey } of identities) {
      let addresses = this.inFile.get(channel);
      if (!addresses) this.inFile.set(channel, (addresses = new Map()));
      if (!addresses.has(identifierKey)) addresses.set(identifierKey, seen);
    }
  }

  /** What later rows see of a row creating a contact. */
  private creating(row: Judged): FileContact {
    row.creates ??= { line: row.line, name: row.contact!.name, contactId: row.contactId! };
    return row.creates;
  }

  /**
   * `existingContacts: merge`: a row whose addresses lead to one contact (of the workspace,
   * or created by an earlier row of the file) merges into it, adding the addresses nobody
   * holds; addresses leading to two contacts leave the row out as
   * `identity_taken_by_several`, and additions past a contact's cap as `identities_full`.
   * Rows merge in file order, so the first to fill a field fills it.
   */
  private merge(row: Judged, keys: readonly string[], holders: Holders, counts: Counts): void {
    const identities = row.contact!.identities;
    const targets = new Set<MergeTarget>();
    for (const key of keys) {
      const holder = holders.get(key);
      if (holder && !this.existing.has(holder.contactId)) {
        const target = { contactId: holder.contactId, name: holder.contactName };
        this.existing.set(holder.contactId, target);
        this.held.set(target, counts.get(holder.contactId) ?? 0);
        this.heldBefore.set(holder.contactId, counts.get(holder.contactId) ?? 0);
      }
      const target = holder ? this.existing.get(holder.contactId) : this.claimed.get(key);
      if (target) targets.add(target);
    }
    if (targets.size > 1) {
      Object.assign(row, severalReason(row, [...targets]));
      return;
    }
    const adds = identities.filter((identity) => {
      const key = identityKey(identity);
      return !holders.has(key) && !this.claimed.has(key);
    });
    let [target] = targets;
    if (!target) {
      target = { row: this.creating(row) };
      this.held.set(target, identities.length);
    } else if (this.held.get(target)! + adds.length > IDENTITIES_PER_CONTACT) {
      Object.assign(row, {
        ...skipped(row.line, reason('identities_full', { max: IDENTITIES_PER_CONTACT })),
        contact: undefined,
        checked: undefined,
        contactId: 'contactId' in target ? target.contactId : null,
        planned: false,
      });
      return;
    } else {
      this.held.set(target, this.held.get(target)! + adds.length);
      Object.assign(row, {
        outcome: 'merge',
        mergeInto: target,
        adds,
        contact: undefined,
        // Into an earlier row's contact: the id its commit gives it.
        contactId: 'contactId' in target ? target.contactId : target.row.contactId,
        planned: !('contactId' in target),
      });
    }
    for (const { channel, identifierKey } of adds) {
      this.claimed.set(identityKey({ channel, identifierKey }), target);
    }
  }
}

const skipped = (line: number, why: RowReason): Judged => ({
  line,
  reason: why,
  contactId: null,
  planned: false,
  outcome: 'skip',
});

type Holders = Map<string, { contactId: string; contactName: string }>;
type Counts = Map<string, number>;

/** A row whose addresses lead to several contacts: left out, naming them. */
function severalReason(row: Judged, targets: readonly MergeTarget[]): Judged {
  const contacts = targets.filter((target) => 'contactId' in target);
  const rows = targets.filter((target) => 'row' in target);
  return {
    ...skipped(
      row.line,
      reason('identity_taken_by_several', {
        ownerNames: contacts.map((target) => target.name),
        contactIds: contacts.map((target) => target.contactId),
        lines: rows.map((target) => target.row.line),
      }),
    ),
    contact: undefined,
    checked: undefined,
  };
}

/** A row's cells judged by its fields: read by kind where the provider can (`checkCells`). */
function checkCells(
  service: FieldsService,
  fields: readonly WritableField[],
  cells: Record<string, string>,
) {
  return service.checkCells
    ? service.checkCells(fields, cells)
    : service.checkValues(fields, cells);
}

/** The row reason a field refusal becomes (SPEC 2.10). */
function valuesReason(checked: unknown): RowReason {
  if (!(checked instanceof AppError)) return null;
  if (checked.reason === 'value_kind_mismatch') return reason('value_kind_mismatch', checked.meta);
  if (checked.reason === 'field_unknown') return reason('field_unknown', checked.meta);
  return reason('field_text_refused');
}

/** What judging reads of a staged row (not its workspace and import: known). */
type StagedRow = Pick<
  ImportRow,
  'line' | 'cells' | 'reason' | 'contactId' | 'contactPlanned' | 'outcome'
>;

/** The import's staged rows in file order, a batch at a time (the next read once asked). */
async function* stagedBatches(db: Db, job: Import): AsyncGenerator<StagedRow[]> {
  let after = 0;
  for (;;) {
    const rows = await db
      .select({
        line: importRows.line,
        cells: importRows.cells,
        reason: importRows.reason,
        contactId: importRows.contactId,
        contactPlanned: importRows.contactPlanned,
        outcome: importRows.outcome,
      })
      .from(importRows)
      .where(
        and(
          eq(importRows.workspaceId, job.workspaceId),
          eq(importRows.importId, job.id),
          gt(importRows.line, after),
        ),
      )
      .orderBy(asc(importRows.line))
      .limit(BATCH);
    if (rows.length === 0) return;
    yield rows;
    if (rows.length < BATCH) return;
    after = rows[rows.length - 1]!.line;
  }
}

/** A row's checked values in their stored forms by field id, nulls left out (none: undefined). */
function storedValues(checked: CheckedFieldValues): Record<string, unknown> | undefined {
  let values: Record<string, unknown> | undefined;
  for (const { field, value } of checked.values) {
    if (value !== null) (values ??= {})[field.id] = value;
  }
  return values;
}

/**
 * What a judgement of the rows depends on of the custom fields, as text: their ids, names,
 * kinds and settings (not their labels or order). A commit finding it changed since the
 * mapping judges the rows again.
 */
export function fieldsJudgedBy(fields: readonly WritableField[]): string {
  return JSON.stringify(
    fields
      .map((field) => [
        field.id,
        field.name,
        field.kind,
        field.options ?? null,
        field.currency ?? null,
      ])
      .sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)),
  );
}

/** Stores each judged row's reason, contact id, outcome and plan, a batch a statement. */
async function storeJudgements(db: Db, job: Import, judged: readonly Judged[]): Promise<void> {
  const lines = `{${judged.map((row) => row.line).join(',')}}`;
  const reasons = JSON.stringify(judged.map((row) => row.reason));
  const contactIds = JSON.stringify(judged.map((row) => row.contactId));
  const planned = `{${judged.map((row) => row.planned).join(',')}}`;
  const outcomes = JSON.stringify(judged.map((row) => row.outcome));
  const plans = JSON.stringify(judged.map((row) => row.plan ?? null));
  // Arrays unnested side by side, joined along the primary key: one index probe a row.
  await db.execute(sql`
    update import_rows
    set reason = given.reason, contact_id = given.contact_id,
      contact_planned = given.planned, outcome = given.outcome, plan = given.plan
    from (
      select line, nullif(reasons.value, 'null'::jsonb) as reason,
        (ids.value #>> '{}')::uuid as contact_id, planned,
        outcomes.value #>> '{}' as outcome, nullif(plans.value, 'null'::jsonb) as plan
      from unnest(${lines}::int[], ${planned}::boolean[]) with ordinality
        as lines(line, planned, n)
      join jsonb_array_elements(${reasons}::jsonb) with ordinality as reasons(value, n) using (n)
      join jsonb_array_elements(${contactIds}::jsonb) with ordinality as ids(value, n) using (n)
      join jsonb_array_elements(${outcomes}::jsonb) with ordinality as outcomes(value, n)
        using (n)
      join jsonb_array_elements(${plans}::jsonb) with ordinality as plans(value, n) using (n)
    ) as given
    where import_rows.workspace_id = ${job.workspaceId}
      and import_rows.import_id = ${job.id} and import_rows.line = given.line`);
}

/**
 * Judges every staged row of `job` through `mapping` in `tx`, the transaction holding the
 * import, and stores each row's judgement and plan: a mapping, or a commit whose plans no
 * longer stand. One batch of rows is held at a time.
 */
export async function judgeRows(
  tx: Db,
  job: Import,
  mapping: readonly (string | null)[],
  fields: readonly WritableField[],
  existing: ExistingContacts,
): Promise<void> {
  // Nothing of the import is written yet: the transaction's reads are the workspace's own.
  const judge = new RowJudge(tx, job.workspaceId, mapping, fields, existing);
  for await (const batch of stagedBatches(tx, job)) {
    await storeJudgements(tx, job, await judge.judge(batch));
  }
}
