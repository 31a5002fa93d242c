// Holding a table's lock from a test, to stop a request at a known point and look at
// what other requests see meanwhile (no sleeps: the waiting statement is found in pg_locks).
import type { TransactionSql } from 'postgres';
import type { TestService } from './service.js';

/**
 * Holds `lock table <table> in share mode` (no inserts but its own) until `release()`;
 * `held` answers the holding transaction once the lock is taken.
 */
export function holdTable(svc: TestService, table: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: (tx: TransactionSql) => void;
  const held = new Promise<TransactionSql>((resolve) => (locked = resolve));
  const done = svc.db.database.sql.begin(async (tx) => {
    await tx.unsafe(`lock table ${table} in share mode`);
    locked(tx);
    await released;
  });
  return { held, release: async () => (release(), await done) };
}

/** Waits until a statement of this database waits for a lock on `table`. */
export async function waiterOn(svc: TestService, table: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [row] = await svc.db.database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_locks
      where not granted and relation = ${table}::regclass`;
    if ((row?.n ?? 0) > 0) return;
  }
  throw new Error(`nothing waited for ${table}`);
}
