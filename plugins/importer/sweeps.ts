// The importer's expiries (docs/importer.md "How long imports are kept"): an import not
// committed within a week goes with its staged rows; a committed import keeps its record
// and counts, and its staged rows go 30 days after the commit. Housekeeping runs them.
import { sql } from 'drizzle-orm';
import { sweepInBatches, type Db, type PluginSweep } from '../../src/plugin-sdk/index.js';
import { importRows, imports } from './tables.js';

/** An import not committed this long after its upload is removed, rows and all. */
export const UNCOMMITTED_KEEP_MS = 7 * 24 * 3_600_000;
/** A committed import's staged rows are removed this long after the commit. */
export const COMMITTED_ROWS_KEEP_MS = 30 * 24 * 3_600_000;

const ago = (ms: number) => sql`now() - ${ms} * interval '1 millisecond'`;
const i = imports;
const r = importRows;

/**
 * Rows go in rounds, each its own statement, so no sweep holds a long transaction on
 * import_rows (an import stages up to 200,000 rows). Answers the rows removed (imports
 * and staged rows).
 */
async function sweepUncommitted(db: Db): Promise<number> {
  const expired = sql`${i.createdAt} < ${ago(UNCOMMITTED_KEEP_MS)}`;
  // First an expired import stops being committable: `failed` (mapping_locked,
  // mapping_required), as an import whose staging failed reads, which holds no rows. An
  // import under work (staging, a mapping, a commit) holds its row lock and is skipped
  // until a later round: its commit never meets rows half swept.
  await sweepInBatches(async (limit) => {
    const rows = await db.execute(sql`
      update ${i} set state = 'failed'
      where ctid = any(array(
        select ctid from ${i}
        where ${i.state} in ('staging', 'staged', 'mapped') and ${expired}
        limit ${limit}
        for update skip locked))
      returning 1`);
    return rows.length;
  });
  const rows = await sweepInBatches(async (limit) => {
    const gone = await db.execute(sql`
      delete from ${r}
      where ctid = any(array(
        select ${r}.ctid from ${r}
        join ${i} on ${i.workspaceId} = ${r.workspaceId} and ${i.id} = ${r.importId}
        where ${i.state} = 'failed' and ${expired}
        limit ${limit}
        for update of ${r} skip locked))
      returning 1`);
    return gone.length;
  });
  // Then the imports themselves, once no row is left (their progress goes by cascade).
  const records = await sweepInBatches(async (limit) => {
    const gone = await db.execute(sql`
      delete from ${i}
      where ctid = any(array(
        select ctid from ${i}
        where ${i.state} = 'failed' and ${expired}
          and not exists (select 1 from ${r}
            where ${r.workspaceId} = ${i.workspaceId} and ${r.importId} = ${i.id})
        limit ${limit}
        for update skip locked))
      returning 1`);
    return gone.length;
  });
  return rows + records;
}

/** A committed import's staged rows, COMMITTED_ROWS_KEEP_MS after its commit. */
async function sweepCommittedRows(db: Db): Promise<number> {
  return sweepInBatches(async (limit) => {
    const gone = await db.execute(sql`
      delete from ${r}
      where ctid = any(array(
        select ${r}.ctid from ${r}
        join ${i} on ${i.workspaceId} = ${r.workspaceId} and ${i.id} = ${r.importId}
        where ${i.state} = 'committed' and ${i.committedAt} < ${ago(COMMITTED_ROWS_KEEP_MS)}
        limit ${limit}
        for update of ${r} skip locked))
      returning 1`);
    return gone.length;
  });
}

export const importerSweeps: PluginSweep[] = [
  { name: 'uncommitted imports', run: sweepUncommitted },
  { name: 'committed rows', run: sweepCommittedRows },
];
