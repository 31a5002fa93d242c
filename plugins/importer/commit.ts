// Mapping an import's columns and committing it (docs/importer.md): every row judged by
// the mapping (SPEC 2.10's reasons), then the rows without a blocking reason written as
// contacts, identities and custom field values in one transaction.
import { randomUUID } from 'node:crypto';
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import {
  AppError,
  addIdentitiesIn,
  lockContactsIn,
  analyzeContacts,
  createContactsIn,
  drizzleOver,
  IDENTITIES_PER_CONTACT,
  identityCounts,
  findService,
  identityHolders,
  identityKey,
  isWritableChannel,
  prepareContact,
  recordEvent,
  refuse,
  signedIn,
  splitListCell,
  type Context,
  type Db,
  type CheckedFieldValues,
  type FieldsService,
  type NewContact,
  type WritableField,
} from '../../src/plugin-sdk/index.js';
import { holdCommitMarker, ProgressReport, type ImportView } from './progress.js';
import { findImport, lockImport } from './service.js';
import {
  importRows,
  imports,
  type Import,
  type ImportRow,
  type RowReason,
  type RowReasonCode,
} from './tables.js';

/** What a column may be mapped to, as `importFields` lists it. */
export interface ImportTarget {
  key: string;
  label: string;
  /** `name`, `identity` or a custom field's kind. */
  kind: string;
}

/** The channels an import may write addresses on. */
const CHANNELS = ['email', 'phone'];

/**
 * Reasons the file gave a row when it was read: those that leave it out stay, whatever the
 * mapping. Every other reason is the last judgement's, judged again from the cells.
 */
const FROM_THE_FILE = new Set(['row_quote_misplaced', 'row_malformed', 'legacy_text']);
/** A reason of the file that still imports. */
const IMPORTS_ANYWAY = new Set(['row_cell_count_mismatch']);

/** Rows written per batch (and per statement of reasons); progress moves by a batch. */
const BATCH = 2_000;

/**
 * The statistics refresh the last commit of this process started (`analyzeContacts`):
 * a mapping or commit waits for it, so its lookups plan with the contacts just written.
 */
let refreshing: Promise<void> = Promise.resolve();

async function writableFields(ctx: Context): Promise<readonly WritableField[]> {
  const fields = findService('fields');
  return fields ? fields.writableFields(ctx, signedIn(ctx).workspaceId) : [];
}

/** `importFields`: the contact's name, each kind of address, and every live custom field. */
export async function importTargets(ctx: Context): Promise<ImportTarget[]> {
  const channels = CHANNELS.filter(isWritableChannel);
  return [
    { key: 'name', label: 'Name', kind: 'name' },
    ...channels.map((channel) => ({
      key: `identity:${channel}`,
      label: channel === 'email' ? 'Email address' : 'Phone number',
      kind: 'identity',
    })),
    ...(await writableFields(ctx)).map((field) => ({
      key: `field:${field.name}`,
      label: field.label,
      kind: field.kind,
    })),
  ];
}

/** A mapping as given: column index → target key. */
export interface ColumnMapping {
  column: number;
  target: string;
}

/** The mapping as stored (a target or null per column), or `mapping_invalid` naming why. */
function parseMapping(
  job: Import,
  given: readonly ColumnMapping[],
  targets: readonly ImportTarget[],
): (string | null)[] {
  const invalid = (why: string) =>
    refuse('mapping_invalid', {}, { message: `mapping invalid: ${why}` });
  const known = new Set(targets.map((target) => target.key));
  const mapping: (string | null)[] = job.columns.map(() => null);
  const used = new Set<string>();
  for (const { column, target } of given) {
    if (!Number.isInteger(column) || column < 0 || column >= job.columns.length) {
      throw invalid(`column ${column} is not one of the file's ${job.columns.length}`);
    }
    if (mapping[column] !== null) throw invalid(`column ${column} is mapped twice`);
    if (!known.has(target)) throw invalid(`${target} is not a target importFields offers`);
    if (used.has(target)) throw invalid(`${target} is mapped twice`);
    used.add(target);
    mapping[column] = target;
  }
  if (!used.has('name')) throw invalid('no column is mapped to the name');
  if (![...used].some((target) => target.startsWith('identity:'))) {
    throw invalid('no column is mapped to an address');
  }
  return mapping;
}

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
    return judged;
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

async function storeReasons(db: Db, job: Import, judged: readonly Judged[]): Promise<void> {
  for (let i = 0; i < judged.length; i += BATCH) {
    const batch = judged.slice(i, i + BATCH);
    const lines = `{${batch.map((row) => row.line).join(',')}}`;
    const reasons = JSON.stringify(batch.map((row) => row.reason));
    const contactIds = JSON.stringify(batch.map((row) => row.contactId));
    const planned = `{${batch.map((row) => row.planned).join(',')}}`;
    const outcomes = JSON.stringify(batch.map((row) => row.outcome));
    // Arrays unnested side by side, joined along the primary key: one index probe a row.
    await db.execute(sql`
      update import_rows
      set reason = given.reason, contact_id = given.contact_id,
        contact_planned = given.planned, outcome = given.outcome
      from (
        select line, nullif(reasons.value, 'null'::jsonb) as reason,
          (ids.value #>> '{}')::uuid as contact_id, planned,
          outcomes.value #>> '{}' as outcome
        from unnest(${lines}::int[], ${planned}::boolean[]) with ordinality
          as lines(line, planned, n)
        join jsonb_array_elements(${reasons}::jsonb) with ordinality as reasons(value, n) using (n)
        join jsonb_array_elements(${contactIds}::jsonb) with ordinality as ids(value, n) using (n)
        join jsonb_array_elements(${outcomes}::jsonb) with ordinality as outcomes(value, n)
          using (n)
      ) as given
      where import_rows.workspace_id = ${job.workspaceId}
        and import_rows.import_id = ${job.id} and import_rows.line = given.line`);
  }
}

/** A value's JSON with object keys sorted: jsonb keeps keys in an order of its own. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Whether the commit's judgement of a row differs from what the row stores. */
function changed(stored: StagedRow, judged: Judged): boolean {
  return (
    stored.outcome !== judged.outcome ||
    (stored.contactId ?? null) !== judged.contactId ||
    stored.contactPlanned !== judged.planned ||
    canonical(stored.reason) !== canonical(judged.reason)
  );
}

/**
 * `importSetMapping`: the mapping and what rows holding an existing contact's address do
 * stored, and every row judged by them.
 */
export async function setMapping(
  ctx: Context,
  id: string,
  given: readonly ColumnMapping[],
  existing: ExistingContacts = 'skip',
): Promise<ImportView> {
  const { workspaceId } = signedIn(ctx);
  await findImport(ctx, id); // an unknown id is import_not_found before anything else
  await refreshing;
  const targets = await importTargets(ctx);
  const fields = await writableFields(ctx);
  const mapped = await ctx.database.db.transaction(async (tx) => {
    const job = await lockImport(tx, workspaceId, id);
    // Staged rows are what a mapping judges: none yet (or ever, once failed), none taken.
    if (job.state !== 'staged' && job.state !== 'mapped') throw refuse('mapping_locked');
    const mapping = parseMapping(job, given, targets);
    // Nothing is written while mapping: the transaction's reads are the workspace's own.
    const judge = new RowJudge(tx, job.workspaceId, mapping, fields, existing);
    for await (const batch of stagedBatches(tx, job)) {
      await storeReasons(tx, job, await judge.judge(batch));
    }
    const [updated] = await tx
      .update(imports)
      .set({ mapping, existingContacts: existing, state: 'mapped' })
      .where(and(eq(imports.workspaceId, job.workspaceId), eq(imports.id, job.id)))
      .returning();
    return updated!;
  });
  return { ...mapped, progress: null };
}

/** PostgreSQL's lock_not_available: `nowait` found the row locked. */
const LOCK_NOT_AVAILABLE = '55P03';

type Wrapped = { code?: unknown; cause?: unknown } | null | undefined;

/** Whether `error` (as drizzle wraps it) is a `nowait` lock another transaction holds. */
function isLockBusy(error: unknown): boolean {
  let e = error as Wrapped;
  for (let depth = 0; e && depth < 4; depth += 1, e = e.cause as Wrapped) {
    if (e.code === LOCK_NOT_AVAILABLE) return true;
  }
  return false;
}

/**
 * `importCommit`: in one transaction, the rows judged again (fields may have changed since
 * the mapping), the importable ones written batch by batch with the progress beside it,
 * the import marked committed and `import.completed` recorded. The import is locked
 * without waiting: another commit (or a mapping) under way answers `import_busy` at once,
 * one that ended answers `already_committed`. A failure leaves nothing written and the
 * import as it was.
 */
export async function commitImport(ctx: Context, id: string): Promise<ImportView> {
  const { actor, workspaceId } = signedIn(ctx);
  const known = await findImport(ctx, id);
  if (known.state === 'committed') throw refuse('already_committed');
  if (known.state === 'staging' || known.state === 'staged' || known.state === 'failed') {
    throw refuse('mapping_required');
  }
  const fields = await writableFields(ctx);
  await refreshing;
  const { db } = ctx.database;
  let progress: ProgressReport | undefined;
  try {
    const committed = await db.transaction(async (tx) => {
      const job = await lockImportNow(tx, workspaceId, id);
      if (job.state === 'committed') throw refuse('already_committed');
      if (job.state !== 'mapped' || !job.mapping) throw refuse('mapping_required');
      // Readers see the commit alive while this transaction holds the marker.
      await holdCommitMarker(tx, job);
      // Beside the transaction, on a connection of its own (the gate keeps one for it).
      progress = await ProgressReport.start(db, job, 'committing', job.rowCount);
      // Addresses are looked up beside the transaction, in what is committed: the file's
      // own contacts, written batch by batch, are judged by what its rows claim.
      const judge = new RowJudge(
        db,
        workspaceId,
        job.mapping,
        fields,
        job.existingContacts === 'merge' ? 'merge' : 'skip',
      );
      const write = { workspaceId, actorUserId: actor.userId, lookup: db };
      let rows = 0;
      let created = 0;
      let merged = 0;
      // A batch's changed reasons (and the progress beside) are stored while the next batch
      // is read and judged beside the transaction (the staged rows are committed, and this
      // transaction holds the import); what is pending holds its statement's arrays, not
      // the rows. A row judged as its mapping judged it, with the contact id it planned,
      // is left as it is: a committed import's rows read their outcome in the past tense.
      let stored: Promise<unknown> = Promise.resolve();
      // Progress steps are written in order beside the transaction, not waited for batch by
      // batch (each is a commit of its own); the last is waited for before the answer.
      let progressed: Promise<void> = Promise.resolve();
      // One batch held at a time (issue 29 goal 6): judged, written, then the next read.
      for await (const staged of stagedBatches(db, job)) {
        const batch = await judge.judge(staged);
        await stored;
        const creating = batch.filter((row) => row.contact);
        const merging = batch.filter((row) => row.outcome === 'merge');
        await createRows(tx, write, creating);
        await mergeRows(tx, write, merging);
        created += creating.length;
        merged += merging.length;
        await heldInFile(tx, workspaceId, batch);
        const moved = batch.filter((row, i) => changed(staged[i]!, row));
        if (moved.length > 0) {
          stored = storeReasons(tx, job, moved);
          stored.catch(() => {}); // awaited with the next batch, or below
        }
        progressed = progress!.advance(batch.length);
        rows += batch.length;
      }
      await stored;
      await progressed;
      const skipped = rows - created - merged;
      const [done] = await tx
        .update(imports)
        .set({
          state: 'committed',
          createdCount: created,
          mergedCount: merged,
          skippedCount: skipped,
          committedAt: new Date(),
        })
        .where(and(eq(imports.workspaceId, workspaceId), eq(imports.id, job.id)))
        .returning();
      await recordEvent(tx, {
        workspaceId,
        name: 'import.completed',
        subjectId: job.id,
        actorUserId: actor.userId,
        data: { created, merged, skipped },
      });
      return done!;
    });
    // The next import's lookups plan with the contacts this one wrote (merged rows added
    // identities too): refreshed once the answer is on its way, on the pool rather than the
    // request's gate, which lets go of the request's statements when it is answered.
    const written = (committed.createdCount ?? 0) + (committed.mergedCount ?? 0);
    refreshing = refreshing
      .then(() => analyzeContacts(drizzleOver(ctx.database.sql), written))
      .catch((failure: unknown) =>
        ctx.log.warn({ err: failure }, 'contacts not analyzed after an import'),
      );
    return { ...committed, progress: null };
  } catch (error) {
    if (isLockBusy(error)) throw refuse('import_busy');
    throw error;
  } finally {
    await progress
      ?.end()
      .catch((failure: unknown) => ctx.log.warn({ err: failure }, 'import progress not cleared'));
  }
}

/** What a commit writes with: the workspace, the actor, and a connection beside it. */
interface Write {
  workspaceId: string;
  actorUserId: string;
  /** Reads what others committed (who took an address meanwhile). */
  lookup: Db;
}

/** The rows' custom field values as judged, for the fields service's bulk writes. */
function checkedValues(rows: readonly Judged[]) {
  return rows
    .filter((row) => row.checked && row.checked.values.length > 0)
    .map((row) => ({ contactId: row.contactId!, checked: row.checked! }));
}

/** Creates the contacts of `importable`, rows of a batch that each create one. */
async function createRows(tx: Db, write: Write, importable: readonly Judged[]): Promise<void> {
  if (importable.length === 0) return;
  // Each with the id judging gave it (the mapping's, when it stands).
  await createContactsIn(
    tx,
    write.workspaceId,
    importable.map((row) => row.contact!),
    { lookup: write.lookup, ids: importable.map((row) => row.contactId!) },
  );
  const writes = checkedValues(importable);
  if (writes.length > 0) {
    await findService('fields')!.writeValuesMany(tx, {
      workspaceId: write.workspaceId,
      actorUserId: write.actorUserId,
      writes,
      event: false,
      fresh: true,
    });
  }
}

/**
 * Merges `merging`, rows of a batch, into their contacts (an earlier row's is created by
 * now): the addresses nobody held added, the values filled where the contact has none.
 */
async function mergeRows(tx: Db, write: Write, merging: readonly Judged[]): Promise<void> {
  if (merging.length === 0) return;
  // Judged before this point: a contact erased since then is refused, not a foreign-key error.
  await lockContactsIn(
    tx,
    write.workspaceId,
    merging.map((row) => row.contactId!),
  );
  await addIdentitiesIn(
    tx,
    write.workspaceId,
    merging.flatMap((row) =>
      row.adds!.map((identity) => ({ contactId: row.contactId!, identity })),
    ),
  );
  const writes = checkedValues(merging);
  if (writes.length > 0) {
    await findService('fields')!.fillValuesMany(tx, {
      workspaceId: write.workspaceId,
      actorUserId: write.actorUserId,
      writes,
      event: false,
    });
  }
}

/** The import locked for the transaction, or lock_not_available at once if it is locked. */
async function lockImportNow(tx: Db, workspaceId: string, id: string): Promise<Import> {
  const [job] = await tx
    .select()
    .from(imports)
    .where(and(eq(imports.workspaceId, workspaceId), eq(imports.id, id)))
    .for('no key update', { noWait: true });
  if (!job) throw refuse('import_not_found');
  return job;
}

/**
 * Rows left out because an earlier row of the file holds an address, whose holder this
 * commit created: they name it (`identity_taken_by`, its contactId) as a row held by a
 * contact already in the workspace does.
 */
async function heldInFile(tx: Db, workspaceId: string, batch: readonly Judged[]): Promise<void> {
  const held = batch.filter((row) => row.heldBy);
  if (held.length === 0) return;
  // Created in this transaction by now (this batch's, or an earlier one's): their names are
  // read back rather than held for every row of the file while judging.
  const ids = [...new Set(held.map((row) => row.heldBy!))];
  const named = await tx.execute<{ id: string; name: string }>(sql`
    select id, name from contacts
    where workspace_id = ${workspaceId}
      and id in (select (jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))::uuid)`);
  const names = new Map(named.map((contact) => [contact.id, contact.name]));
  for (const row of held) {
    row.reason = reason('identity_taken_by', { ownerName: names.get(row.heldBy!) ?? '' });
    row.contactId = row.heldBy!;
  }
}
