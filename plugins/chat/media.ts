// Inbound media (docs/chat.md, SPEC 3 "Chat media", 8.1, 8.2): each message carrying a file
// is downloaded from the platform shortly after it arrives and stored in PostgreSQL.
//
// The downloads are a job kind of the SDK's one runner (docs/plugins.md "Background jobs"),
// stored in the messages themselves: the chat_messages rows whose media_state is 'pending',
// due when media_next_at has passed (chat_messages_media_due_idx), media_attempts counting
// the claims. The runner claims them with a lease (a process that dies mid-download leaves
// the row due again once the lease runs out: nothing outlives a failure), fairly across
// workspaces (one workspace's slow downloads never hold every slot), and retries them with
// a widening wait inside MEDIA_RETRY_WINDOW_MS. The lookup and the download run outside
// any transaction; every outcome is written only while the row still holds the attempt it
// was claimed with (media_attempts), so a worker whose lease ran out never overwrites the
// outcome of the one that took over.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sql } from 'drizzle-orm';
import {
  answerJson,
  describeOutcome,
  drizzleOver,
  fetchOutbound,
  JobRetry,
  wakeJobs,
  type Config,
  type JobContext,
  type JobKind,
  type OutboundAnswer,
  type OutboundResult,
} from '../../src/plugin-sdk/index.js';
import { MEDIA_SETTLED, recordChatEvent } from './events.js';
import { lineOf, type ChatLine } from './settings.js';
import { chatMessages } from './tables.js';

/** pending → stored | too_large | failed; the last three are final. */
export type MediaState = 'pending' | 'stored' | 'too_large' | 'failed';

/** A claim holds its row this long: longer than a lookup and a download together may take. */
export const MEDIA_LEASE_MS = 2 * 60_000;
/** Retries stop this long after the message arrived; the media is then `failed`. */
export const MEDIA_RETRY_WINDOW_MS = 24 * 60 * 60_000;
const LOOKUP_TIMEOUT_MS = 15_000;
/** A lookup's answer is a small JSON object. */
const LOOKUP_MAX_BYTES = 64 * 1024;
/** The whole download, well inside the lease. */
const DOWNLOAD_TIMEOUT_MS = 90_000;
/** A download's connection and headers, and each wait for its next chunk. */
const DOWNLOAD_STEP_MS = 15_000;
/** Redirects a download may follow (each hop judged by the address rules). */
const DOWNLOAD_REDIRECTS = 3;
/**
 * Downloads in flight at once per process: at most this many capped files in memory. One
 * workspace holds at most two of them (the runner's share), so another always finds one.
 */
const CONCURRENCY = 3;
/** media_error holds at most this much text. */
const ERROR_MAX = 200;

/** The wait after the n-th failed attempt (1-based): min(1 h, 5 s × 2^(n-1)). */
export function mediaRetryDelayMs(attempts: number): number {
  return Math.min(60 * 60_000, 5000 * 2 ** Math.max(0, attempts - 1));
}

export const MEDIA_JOB = 'chat.media';

/**
 * Wakes this process's media runner (inbound code calls it after storing a message with
 * media); a no-op while none runs. Other processes find the row at their next poll.
 */
export function wakeMediaWorker(): void {
  wakeJobs(MEDIA_JOB);
}

/** A claimed row: what the attempt needs, and the attempt number that fences its outcome. */
interface Claimed {
  workspaceId: string;
  id: string;
  conversationId: string;
  mediaId: string | null;
  mimeType: string | null;
  attempt: number;
}

/**
 * A failed attempt; its message is stored as media_error (no secrets in it). Retried, unless
 * `final`: the media is then `failed` at once.
 */
class MediaFailure extends Error {
  constructor(
    message: string,
    readonly final = false,
  ) {
    super(message);
  }
}

const m = chatMessages;

/** The download job: the runner's claim, lease, retries and fairness over chat_messages. */
export const mediaJob: JobKind<Omit<Claimed, 'workspaceId' | 'id' | 'attempt'>> = {
  name: MEDIA_JOB,
  leaseMs: MEDIA_LEASE_MS,
  concurrency: CONCURRENCY,
  retry: { delayMs: mediaRetryDelayMs, windowMs: MEDIA_RETRY_WINDOW_MS },
  storage: {
    table: m,
    workspaceId: m.workspaceId,
    id: m.id,
    dueAt: m.mediaNextAt,
    attempts: m.mediaAttempts,
    windowFrom: m.createdAt,
    pending: sql`${m.mediaState} = 'pending'`,
    fields: { conversationId: m.conversationId, mediaId: m.mediaId, mimeType: m.mediaMimeType },
    recordFailure: (tx, row, failure) => recordFailure(tx, row, failure.error, failure.final),
  },
  run: (row, context) => mediaWork(context).attempt(row),
};

type Outcome =
  | { state: 'stored'; contentType: string; size: number; sha256: string; chunks: Uint8Array[] }
  | { state: 'too_large'; size: number | null; contentType: string | null };

/** A header-safe media type, or null (the platform's value becomes a response header). */
export function safeContentType(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed.length <= 255 && /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;[\x20-\x7e]*)?$/.test(trimmed)
    ? trimmed
    : null;
}

/** One attempt's work: lookup, download, and the outcome it writes. */
function mediaWork(runtime: JobContext) {
  const { config, database, log } = runtime;
  const pool = database.sql;

  async function attempt(row: Claimed): Promise<void> {
    let outcome: Outcome;
    try {
      if (!row.mediaId) throw new MediaFailure('the message names no media id');
      const line = await lineOf(database.db, config, row.workspaceId);
      if (!line) throw new MediaFailure('no chat line (access token) for the workspace');
      outcome = await fetchMedia(config, line, row.mediaId);
    } catch (error) {
      const message =
        error instanceof MediaFailure ? error.message : `unexpected: ${describe(error)}`;
      if (!(error instanceof MediaFailure)) {
        log.error({ err: error, messageId: row.id }, 'chat media download failed unexpectedly');
      }
      if (error instanceof MediaFailure && error.final) {
        log.warn({ messageId: row.id, error: message }, 'chat media refused; not retried');
        await settle(row, 'failed', null, null, message);
        return;
      }
      throw new JobRetry(message);
    }
    if (outcome.state === 'too_large') {
      await settle(row, 'too_large', outcome.size, outcome.contentType);
      log.info({ messageId: row.id, size: outcome.size }, 'chat media over the size cap');
      return;
    }
    try {
      await store(row, outcome);
    } catch (error) {
      log.error({ err: error, messageId: row.id }, 'chat media could not be stored');
      throw new JobRetry('storing the file failed');
    }
  }

  /**
   * Lookup, then download: stored bytes, too large, or a MediaFailure. Both go through the
   * SDK's outbound fetch: the lookup's `url` is the platform's word, so its address (and each
   * redirect's) is judged like any other, and the bearer never follows a redirect elsewhere.
   */
  async function fetchMedia(cfg: Config, line: ChatLine, mediaId: string): Promise<Outcome> {
    const cap = cfg.chat.mediaMaxBytes;
    const auth = { authorization: `Bearer ${line.accessToken}` };
    const lookupUrl = `${cfg.chat.graphUrl.replace(/\/+$/, '')}/${encodeURIComponent(mediaId)}`;
    const looked = request(
      'lookup',
      await fetchOutbound(cfg, {
        url: lookupUrl,
        headers: auth,
        timeoutMs: LOOKUP_TIMEOUT_MS,
        maxBytes: LOOKUP_MAX_BYTES,
      }),
    );
    const body = answerJson(looked) as {
      url?: unknown;
      mime_type?: unknown;
      file_size?: unknown;
    } | null;
    if (!body || typeof body.url !== 'string' || !/^https?:\/\//i.test(body.url)) {
      throw new MediaFailure('lookup answered no download url');
    }
    const size = Number(body.file_size);
    const contentType = safeContentType(body.mime_type);
    if (body.file_size !== undefined && Number.isFinite(size) && size > cap) {
      return { state: 'too_large', size, contentType };
    }
    const result = await fetchOutbound(cfg, {
      url: body.url,
      // The platform's download URLs want the bearer too; a redirect elsewhere drops it.
      headers: auth,
      maxRedirects: DOWNLOAD_REDIRECTS,
      timeoutMs: DOWNLOAD_TIMEOUT_MS,
      stepTimeoutMs: DOWNLOAD_STEP_MS,
      maxBytes: cap,
    });
    if (result.kind === 'too_large') {
      return { state: 'too_large', size: result.declared, contentType };
    }
    const file = request('download', result);
    const hash = createHash('sha256');
    // The file is held once, as it arrived; the store sends these chunks as they are.
    for (const chunk of file.chunks) hash.update(chunk);
    const headerType = file.headers['content-type'];
    return {
      state: 'stored',
      contentType: contentType ?? safeContentType(headerType) ?? 'application/octet-stream',
      size: file.size,
      sha256: hash.digest('hex'),
      chunks: file.chunks,
    };
  }

  /**
   * The message stored and its bytes in one transaction, with MEDIA_SETTLED; nothing when
   * the row no longer holds this attempt. The bytes go in by binary COPY, chunk by chunk,
   * so they are never copied into one buffer (a bytea parameter would be hex text twice
   * the file's size, and a message buffer as large again).
   */
  async function store(row: Claimed, file: Extract<Outcome, { state: 'stored' }>) {
    await pool.begin(async (tx) => {
      const [settled] = await tx`
        update chat_messages
        set media_state = 'stored', media_bytes = ${file.size}, media_error = null,
            media_next_at = null, media_mime_type = coalesce(media_mime_type, ${file.contentType})
        where workspace_id = ${row.workspaceId} and id = ${row.id}
          and media_state = 'pending' and media_attempts = ${row.attempt}
        returning id`;
      if (!settled) return;
      await tx`delete from chat_media where workspace_id = ${row.workspaceId} and message_id = ${row.id}`;
      const copy = await tx`
        copy chat_media (workspace_id, message_id, content_type, size, sha256, bytes)
        from stdin with (format binary)`.writable();
      await pipeline(Readable.from(binaryTuple(row, file)), copy);
      await recordChatEvent(drizzleOver(tx), {
        workspaceId: row.workspaceId,
        name: MEDIA_SETTLED,
        conversationId: row.conversationId,
        data: { message_id: row.id, media_state: 'stored' },
      });
    });
  }

  /** A final state other than stored, with MEDIA_SETTLED, if the row still holds the attempt. */
  async function settle(
    row: Claimed,
    state: 'too_large' | 'failed',
    size: number | null,
    contentType: string | null,
    error: string | null = null,
  ): Promise<void> {
    const text = state === 'too_large' ? 'larger than SVC_CHAT_MEDIA_MAX_BYTES' : error;
    await database.db.transaction(async (tx) => {
      const settled = await tx.execute(sql`
        update chat_messages
        set media_state = ${state}, media_bytes = coalesce(${size}::bigint, media_bytes),
            media_next_at = null, media_mime_type = coalesce(media_mime_type, ${contentType}),
            media_error = ${text?.slice(0, ERROR_MAX) ?? null}
        where workspace_id = ${row.workspaceId} and id = ${row.id}
          and media_state = 'pending' and media_attempts = ${row.attempt}
        returning id`);
      if (settled.length === 0) return;
      await recordChatEvent(tx, {
        workspaceId: row.workspaceId,
        name: MEDIA_SETTLED,
        conversationId: row.conversationId,
        data: { message_id: row.id, media_state: state },
      });
    });
  }

  return { attempt };
}

/**
 * A failed attempt, after the runner rescheduled the row in `tx` (due again after a
 * widening wait, never later than the end of the retry window): its media_error, and when
 * the window has run out, `failed` with MEDIA_SETTLED.
 */
async function recordFailure(
  tx: Parameters<JobKind<never>['storage']['recordFailure']>[0],
  row: Pick<Claimed, 'workspaceId' | 'id' | 'conversationId'>,
  error: string,
  final: boolean,
): Promise<void> {
  const text = error.slice(0, ERROR_MAX);
  await tx.execute(sql`
    update chat_messages
    set media_error = ${text},
        media_state = ${final ? 'failed' : 'pending'},
        media_next_at = ${final ? null : sql`media_next_at`}
    where workspace_id = ${row.workspaceId} and id = ${row.id}`);
  if (!final) return;
  await recordChatEvent(tx, {
    workspaceId: row.workspaceId,
    name: MEDIA_SETTLED,
    conversationId: row.conversationId,
    data: { message_id: row.id, media_state: 'failed' },
  });
}

/**
 * A 2xx answer of `step`, or a MediaFailure naming the step and why, never the URL (it may
 * carry a token) or the bearer. A refused address is final: retrying cannot change the rule.
 */
function request(step: 'lookup' | 'download', result: OutboundResult): OutboundAnswer {
  if (result.kind === 'answered') {
    if (result.status >= 200 && result.status < 300) return result;
    const code = graphErrorCode(result);
    throw new MediaFailure(
      `${step} answered ${result.status}${code === null ? '' : ` (code ${code})`}`,
    );
  }
  if (result.kind === 'refused') {
    throw new MediaFailure(`${step} refused: ${describeOutcome(result)}`, true);
  }
  if (result.kind === 'failed' && result.reason === 'timeout') {
    throw new MediaFailure(`${step} timed out`);
  }
  throw new MediaFailure(`${step} failed: ${describeOutcome(result)}`);
}

/** The platform error's numeric code, if the body is one (a few KiB at most). */
function graphErrorCode(answer: OutboundAnswer): number | null {
  const type = answer.headers['content-type'] ?? '';
  if (!type.includes('json') || answer.size > 16_384) return null;
  const body = answerJson(answer) as { error?: { code?: unknown } } | null;
  return typeof body?.error?.code === 'number' ? body.error.code : null;
}

/** An unexpected error's kind in a few words, never a URL. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown error';
  return error.message.replace(/https?:\/\/\S+/g, '<url>').slice(0, ERROR_MAX);
}

const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

function field(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/**
 * One chat_media row in COPY's binary format (header, the tuple, trailer): the fixed
 * fields, then the bytea's length and the file's chunks as they arrived.
 */
function* binaryTuple(
  row: Claimed,
  file: { contentType: string; size: number; sha256: string; chunks: Uint8Array[] },
): Generator<Buffer | Uint8Array> {
  const header = Buffer.alloc(8 + 2); // flags, extension length, field count
  header.writeInt16BE(6, 8);
  const size = Buffer.alloc(8);
  size.writeBigInt64BE(BigInt(file.size));
  const bytesLength = Buffer.alloc(4);
  bytesLength.writeInt32BE(file.size);
  yield Buffer.concat([
    COPY_SIGNATURE,
    header,
    field(Buffer.from(row.workspaceId.replace(/-/g, ''), 'hex')),
    field(Buffer.from(row.id.replace(/-/g, ''), 'hex')),
    field(Buffer.from(file.contentType, 'utf8')),
    field(size),
    field(Buffer.from(file.sha256, 'utf8')),
    bytesLength,
  ]);
  for (const chunk of file.chunks) yield chunk;
  const trailer = Buffer.alloc(2);
  trailer.writeInt16BE(-1);
  yield trailer;
}
