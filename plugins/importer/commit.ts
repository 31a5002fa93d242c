// Mapping an import's columns and committing it (docs/importer.md): the mapping judges
// every row (SPEC 2.10's reasons) and stores with each what the commit writes of it; the
// commit writes those plans in one transaction, the database reading them where they are
// staged, once it knows what they rest on still holds.
import { and, eq, sql, type SQL } from 'drizzle-orm';
import {
  AppError,
  addIdentitiesFrom,
  analyzeContacts,
  createContactsFrom,
  drizzleOver,
  findService,
  isWritableChannel,
  lockContactsFrom,
  recordEvent,
  refuse,
  signedIn,
  type Context,
  type Db,
  type WritableField,
} from '../../src/plugin-sdk/index.js';
import { fieldsJudgedBy, judgeRows, type ExistingContacts, type RowOutcome } from './judge.js';
import { holdCommitMarker, ProgressReport, type ImportView } from './progress.js';
import { findImport, lockImport } from './service.js';
import { imports, type Import } from './tables.js';

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

/**
 * `importSetMapping`: the mapping and what rows holding an existing contact's address do
 * stored, and every row judged by them, with the plan the commit writes from.
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
    await judgeRows(tx, job, mapping, fields, existing);
    const [updated] = await tx
      .update(imports)
      .set({
        mapping,
        existingContacts: existing,
        plannedWith: fieldsJudgedBy(fields),
        state: 'mapped',
      })
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

/** Thrown inside the plans' savepoint to roll their writes back: a premise no longer holds. */
class PlansStale extends Error {}

/**
 * `importCommit`: in one transaction, the rows' plans written, a step of rows at a time
 * with the progress beside it, the import marked committed and `import.completed`
 * recorded. The plans are the mapping's: what the workspace held then is checked again
 * beside the transaction while it writes (`plansStand`), and a plan that no longer stands
 * (an address taken or freed since, a holder renamed, a field archived) has every row
 * judged again in the transaction before anything stays written. The import is locked
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
      const mode = job.existingContacts === 'merge' ? 'merge' : 'skip';
      const write: PlanWrite = { job, lookup: db, fields, actorUserId: actor.userId };
      let stand = job.plannedWith !== null && job.plannedWith === fieldsJudgedBy(fields);
      if (stand) {
        // What others committed since the mapping is read beside the writes, while they run.
        const standing = plansStand(db, job);
        standing.catch(() => {}); // awaited below, whichever way the writes end
        try {
          await tx.transaction(async (savepoint) => {
            await writePlans(savepoint, write, progress!);
            if (!(await standing)) throw new PlansStale();
          });
        } catch (error) {
          // A refusal of the writes (an address taken, a contact gone) is the commit's
          // when the plans stood; one they had already fallen to is judged again below.
          if (!(error instanceof PlansStale) && !(error instanceof AppError)) throw error;
          if (error instanceof AppError && (await standing)) throw error;
          stand = false;
        }
      }
      if (!stand) {
        await judgeRows(tx, job, job.mapping, fields, mode);
        // What the rolled back writes reported is done again from the start.
        await progress.settled().catch(() => {});
        progress = await ProgressReport.start(db, job, 'committing', job.rowCount);
        await writePlans(tx, write, progress);
      }
      await nameFileHolders(tx, job);
      await progress.settled();
      const [counts] = await tx.execute<{ created: number; merged: number; rows: number }>(sql`
        select count(*) filter (where outcome = 'create')::int as created,
          count(*) filter (where outcome = 'merge')::int as merged, count(*)::int as rows
        from import_rows where workspace_id = ${workspaceId} and import_id = ${job.id}`);
      const { created, merged, rows } = counts!;
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

/** What writing an import's plans needs: the import, and a connection beside it. */
interface PlanWrite {
  job: Import;
  /** Reads what others committed (who took an address meanwhile). */
  lookup: Db;
  /** The custom fields the plans were judged with, and who commits. */
  fields: readonly WritableField[];
  actorUserId: string;
}

/**
 * Staged rows written per step, the progress moving by as many: 2,000, or a tenth of a
 * larger import. Every step is a statement a table, and a bulk statement's triggers cost
 * less a row the more rows it has (25 steps of 50,000 rows took ~8% longer than 10).
 */
const stepOf = (rowCount: number) => Math.max(2_000, Math.ceil(rowCount / 10));

/** Each planned address of a staged row, with its place in the row (`n`). */
const ADDRESSES = sql`cross join lateral rows from (
    jsonb_to_recordset(staged.plan->'addresses')
      as (channel text, identifier text, "identifierKey" text, "displayName" text, add boolean)
  ) with ordinality as address(channel, identifier, "identifierKey", "displayName", add, n)`;
/** Each planned value of a staged row: its field's id and its stored form. */
const VALUES = sql`cross join lateral jsonb_each(staged.plan->'values') as value(field, stored)`;

/** One step of an import's rows: those after line `after` up to `last`. */
interface Step {
  job: Import;
  after: number;
  last: number;
}

/** The rows of `step` whose outcome is `outcome`, as a from clause, each with `join`. */
function stepRows(step: Step, outcome: RowOutcome, join: SQL = sql``): SQL {
  return sql`from import_rows as staged ${join}
    where staged.workspace_id = ${step.job.workspaceId} and staged.import_id = ${step.job.id}
      and staged.line > ${step.after} and staged.line <= ${step.last}
      and staged.outcome = ${outcome}`;
}

/** The planned addresses of a step's rows as the SDK's staged identities, in file order. */
function addressesOf(step: Step, outcome: RowOutcome): SQL {
  return sql`select staged.contact_id, address.channel, address.identifier,
      address."identifierKey" as identifier_key, address."displayName" as display_name
    ${stepRows(step, outcome, ADDRESSES)}
    ${outcome === 'merge' ? sql`and address.add` : sql``}
    order by staged.line, address.n`;
}

/** The planned values of a step's rows as the fields service's staged values, in file order. */
function valuesOf(step: Step, outcome: RowOutcome): SQL {
  return sql`select staged.contact_id, value.field::uuid as field_id, value.stored as value
    ${stepRows(step, outcome, VALUES)} order by staged.line`;
}

/**
 * Writes the plans of `write.job`'s rows in `tx`, a step of rows in file order at a time:
 * the contacts the rows creating one create, with their addresses and values, then what
 * merging rows add to theirs. Every statement reads the rows where they are staged; the
 * progress moves by a step once it is written.
 */
async function writePlans(tx: Db, write: PlanWrite, progress: ProgressReport): Promise<void> {
  const { job } = write;
  const size = stepOf(job.rowCount);
  for (let after = 0; ;) {
    const [next] = await tx.execute<{ last: number | null; rows: number }>(sql`
      select max(line) as last, count(*)::int as rows from (
        select line from import_rows
        where workspace_id = ${job.workspaceId} and import_id = ${job.id} and line > ${after}
        order by line limit ${size}
      ) as step`);
    if (!next || next.rows === 0 || next.last === null) return;
    const step: Step = { job, after, last: next.last };
    await createContactsFrom(
      tx,
      job.workspaceId,
      {
        contacts: sql`select staged.contact_id as id, staged.plan->>'name' as name
          ${stepRows(step, 'create')} order by staged.line`,
        identities: addressesOf(step, 'create'),
      },
      { lookup: write.lookup },
    );
    await writeValues(tx, write, step, 'create');
    if (job.existingContacts === 'merge') {
      // Judged before this point: a contact erased since is refused, not a foreign-key error.
      await lockContactsFrom(
        tx,
        job.workspaceId,
        sql`select staged.contact_id ${stepRows(step, 'merge')}`,
      );
      await addIdentitiesFrom(tx, job.workspaceId, addressesOf(step, 'merge'));
      await writeValues(tx, write, step, 'merge');
    }
    void progress.advance(next.rows);
    after = next.last;
  }
}

/**
 * The planned values of a step's rows written by the fields service: created contacts'
 * values, or a merge's filled where its contact holds none. A provider without
 * `writeValuesFrom` is handed the step's values as checked values (one step held).
 */
async function writeValues(tx: Db, write: PlanWrite, step: Step, outcome: RowOutcome) {
  const service = findService('fields');
  if (!service) return;
  const workspaceId = step.job.workspaceId;
  if (service.writeValuesFrom) {
    const values = valuesOf(step, outcome);
    await service.writeValuesFrom(tx, { workspaceId, values, fill: outcome === 'merge' });
    return;
  }
  const planned = await tx.execute<{ contactId: string; values: Record<string, unknown> }>(sql`
    select staged.contact_id as "contactId", staged.plan->'values' as values
    ${stepRows(step, outcome)} and staged.plan ? 'values' order by staged.line`);
  const byId = new Map(write.fields.map((field) => [field.id, field]));
  const writes = planned.map(({ contactId, values }) => ({
    contactId,
    checked: {
      values: Object.entries(values).map(([id, value]) => ({ field: byId.get(id)!, value })),
    },
  }));
  if (writes.length === 0) return;
  const input = { workspaceId, actorUserId: write.actorUserId, writes, event: false };
  if (outcome === 'merge') await service.fillValuesMany(tx, input);
  else await service.writeValuesMany(tx, { ...input, fresh: true });
}

/**
 * Whether every plan of `job`'s rows still stands in what is committed (`db` beside the
 * commit's transaction): each address a row names held by the contact that held it when
 * the row was judged (or still by none), that contact's name the same and, for a merge, its
 * count of identities. One statement over the staged plans; the file's own contacts, which
 * the commit creates, are not seen and need not be.
 */
async function plansStand(db: Db, job: Import): Promise<boolean> {
  const [checked] = await db.execute<{ stand: boolean }>(sql`
    select not exists (
      select 1 from import_rows as staged
      cross join lateral jsonb_to_recordset(staged.plan->'addresses') as address(
        channel text, "identifierKey" text, holder uuid, "holderName" text, "holderCount" int)
      left join contact_identities as held on held.workspace_id = staged.workspace_id
        and held.channel = address.channel and held.identifier_key = address."identifierKey"
      where staged.workspace_id = ${job.workspaceId} and staged.import_id = ${job.id}
        and staged.plan is not null
        and (held.contact_id is distinct from address.holder
          or address.holder is not null and (
            address."holderName" is distinct from (
              select name from contacts
              where workspace_id = staged.workspace_id and id = address.holder)
            or address."holderCount" <> (
              select count(*) from contact_identities
              where workspace_id = staged.workspace_id and contact_id = address.holder)))
    ) as stand`);
  return checked!.stand;
}

/**
 * Rows left out because an earlier row of the file holds an address, whose holder this
 * commit created: they name it (`identity_taken_by`, its name), as a row held by a contact
 * already in the workspace does. One statement once the contacts are written.
 */
async function nameFileHolders(tx: Db, job: Import): Promise<void> {
  await tx.execute(sql`
    update import_rows as held
    set reason = jsonb_build_object(
      'code', 'identity_taken_by', 'meta', jsonb_build_object('ownerName', owner.name))
    from contacts as owner
    where held.workspace_id = ${job.workspaceId} and held.import_id = ${job.id}
      and held.contact_planned and held.reason->>'code' = 'identity_taken'
      and owner.workspace_id = held.workspace_id and owner.id = held.contact_id`);
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
