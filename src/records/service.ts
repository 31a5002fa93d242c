import { desc, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { accountRecords, type AccountRecord } from './tables.js';

/** One account change made by an operator command (SPEC 4.6 `-as`, 8.2 "Command records"). */
export interface NewAccountRecord {
  /** The operator named by `-as`. */
  actor: string;
  /** The command as typed, e.g. `token:create`. */
  command: string;
  workspaceId: string | null;
  /** The account the change touched (its email), when there is one. */
  subject: string | null;
  /** What changed; never a secret (password, token secret). */
  detail: Record<string, unknown>;
}

/** The record could not be stored; the change it describes was already made and stays. */
export class RecordNotStored extends Error {
  override name = 'RecordNotStored';
  constructor(
    readonly why: 'timeout' | 'failed',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const QUERY_CANCELED = '57014';
/** Beyond the server-side timeout, how long to wait before giving up on an unanswering server. */
const BACKSTOP_MS = 2000;

/**
 * Stores one record after the change it describes, within `timeoutMs` (SPEC 8.2
 * SVC_COMMAND_RECORD_TIMEOUT). The bound is the server's `statement_timeout` on the
 * insert's own transaction, so a record reported as not stored never lands later; a
 * backstop covers a server that stops answering altogether.
 */
export async function storeAccountRecord(
  db: Db,
  record: NewAccountRecord,
  timeoutMs: number,
): Promise<AccountRecord> {
  const store = db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('statement_timeout', ${String(timeoutMs)}, true)`);
    const [row] = await tx.insert(accountRecords).values(record).returning();
    return row as AccountRecord;
  });
  // When the backstop wins, the store's own failure comes later with no one awaiting it.
  store.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const backstop = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RecordNotStored('timeout', `not stored within ${timeoutMs}ms`)),
      timeoutMs + BACKSTOP_MS,
    );
  });
  try {
    return await Promise.race([store, backstop]);
  } catch (error) {
    if (error instanceof RecordNotStored) throw error;
    const code = (error as { code?: string; cause?: { code?: string } }).code;
    const causeCode = (error as { cause?: { code?: string } }).cause?.code;
    if (code === QUERY_CANCELED || causeCode === QUERY_CANCELED) {
      throw new RecordNotStored('timeout', `not stored within ${timeoutMs}ms`, { cause: error });
    }
    const message = (error as { cause?: Error }).cause?.message ?? (error as Error).message;
    throw new RecordNotStored('failed', `not stored: ${message}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** The newest records first. */
export async function listAccountRecords(db: Db, limit: number): Promise<AccountRecord[]> {
  return db
    .select()
    .from(accountRecords)
    .orderBy(desc(accountRecords.at), desc(accountRecords.id))
    .limit(limit);
}
