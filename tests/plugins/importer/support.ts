// What the importer's tests share: a multipart upload (GraphQL multipart request spec).
import type { TransactionSql } from 'postgres';
import type { GraphBody, TestService } from '../../support/service.js';

export const UPLOAD = `mutation ($file: Upload!) {
  importUpload(file: $file) {
    id fileName format state columns rowCount
    rows(first: 200) { line cells reason { code meta } }
  }
}`;

/** POSTs `bytes` as the `file` variable of `query` (the admin's unless `headers` say). */
export async function uploadFile(
  svc: TestService,
  bytes: Uint8Array | string,
  name = 'contacts.csv',
  headers: Record<string, string> = svc.adminHeaders,
  query = UPLOAD,
): Promise<{ status: number; body: GraphBody }> {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query, variables: { file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', new Blob([bytes as BlobPart]), name);
  const response = await fetch(`${svc.url}/api/graphql`, { method: 'POST', headers, body: form });
  return { status: response.status, body: (await response.json()) as GraphBody };
}

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
