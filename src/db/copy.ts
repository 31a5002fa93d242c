// Rows written with COPY … FROM STDIN in the caller's transaction: the bulk path PostgreSQL
// writes fastest (heap pages filled many rows at a time), for writes that need no
// `on conflict` (fresh rows). A row that breaks a constraint fails the whole COPY, and with
// it the transaction.
import type { Writable } from 'node:stream';
import type { Db } from './client.js';

/** A value of a COPY row: text as it is, null as NULL, an object or array as its JSON. */
export type CopyValue = string | number | boolean | Date | null | undefined | object;

/** What `copyRows` needs of the client under a Drizzle `Db`. */
interface CopyClient {
  /** The gate's transaction client (src/db/gate.ts). */
  copyFrom?(statement: string): Promise<Writable>;
  /** A postgres.js client (a pool or a transaction): `unsafe(copy).writable()`. */
  unsafe?(statement: string): { writable?(): Promise<Writable> };
}

/** Bytes of COPY text handed to the connection at a time. */
const CHUNK_CHARS = 256 * 1024;

const ESCAPED = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A value in COPY's text format. */
function copyText(value: CopyValue): string {
  if (value === null || value === undefined) return '\\N';
  const text =
    typeof value === 'string'
      ? value
      : value instanceof Date
        ? value.toISOString()
        : typeof value === 'object'
          ? JSON.stringify(value)
          : String(value);
  return ESCAPED.test(text) ? text.replace(/[\\\t\n\r]/g, (char) => ESCAPES[char]!) : text;
}

const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The COPY stream of `statement` on `db`'s connection, which must be a transaction's. */
async function copyStream(db: Db, statement: string): Promise<Writable> {
  const client = (db as unknown as { session?: { client?: CopyClient } }).session?.client;
  if (client?.copyFrom) return client.copyFrom(statement);
  const query = client?.unsafe?.(statement);
  if (query?.writable) return query.writable();
  throw new Error('copyRows needs a transaction (or a postgres.js client) to COPY on');
}

/**
 * Writes `rows` (values in `columns`' order) into `table` with one `COPY … FROM STDIN` on
 * `db`, the caller's transaction, in chunks the connection takes as it can. Columns left
 * out take their defaults. Rejects with the database's error (a unique or foreign key
 * violation) if a row is refused; nothing of the COPY is then written, and the
 * transaction can only roll back.
 */
export async function copyRows(
  db: Db,
  table: string,
  columns: readonly string[],
  rows: Iterable<readonly CopyValue[]>,
): Promise<void> {
  const stream = await copyStream(
    db,
    `copy ${quoted(table)} (${columns.map(quoted).join(', ')}) from stdin`,
  );
  let failed: Error | null = null;
  stream.on('error', (error: Error) => (failed ??= error));
  let chunk = '';
  for (const row of rows) {
    // Built by concatenation, no array of texts and its join a row (an import's 250,000
    // rows allocated ~80 MB through them).
    let line = copyText(row[0]);
    for (let i = 1; i < row.length; i += 1) line += '\t' + copyText(row[i]);
    chunk += line + '\n';
    if (chunk.length < CHUNK_CHARS) continue;
    const more = stream.write(chunk);
    chunk = '';
    if (!more && !failed) {
      await new Promise<void>((resolve) => {
        const go = () => {
          stream.off('drain', go);
          stream.off('error', go);
          resolve();
        };
        stream.once('drain', go);
        stream.once('error', go);
      });
    }
    if (failed) throw failed;
  }
  await new Promise<void>((resolve, reject) => {
    if (failed) return reject(failed);
    // The database's refusal arrives as the stream's error, or as end's.
    stream.once('error', reject);
    stream.end(chunk, (error?: Error | null) => (error ? reject(error) : resolve()));
  });
  if (failed) throw failed;
}
