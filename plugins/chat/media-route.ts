// GET /api/plugins/chat/conversations/:id/messages/:mid/media (SPEC 4.3 "GET media"): a
// stored media file of the caller's workspace. The host's guard has already required a
// session or a token holding chat:read and applied the plugin-route bounds.
//
// The bytes are read from PostgreSQL a chunk at a time (substring over the uncompressed
// TOAST value reads only the chunks asked for), so a large file never sits whole in memory.
import { sql } from 'drizzle-orm';
import type { Db, PluginRoute, RouteContext } from '../../src/plugin-sdk/index.js';
import { safeContentType } from './media.js';

/** Bytes read from the database per statement while streaming. */
export const MEDIA_READ_CHUNK = 256 * 1024;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface StoredMedia {
  contentType: string;
  size: number;
  sha256: string;
  fileName: string | null;
}

function notFound(): Response {
  return Response.json({ error: 'not found' }, { status: 404 });
}

/** The message's stored media, if the message is the workspace's and its media is stored. */
async function findMedia(
  db: Db,
  workspaceId: string,
  conversationId: string,
  messageId: string,
): Promise<StoredMedia | null> {
  const rows = (await db.execute(sql`
    select f.content_type, f.size, f.sha256, m.media_file_name
    from chat_messages m
    join chat_media f on f.workspace_id = m.workspace_id and f.message_id = m.id
    where m.workspace_id = ${workspaceId} and m.conversation_id = ${conversationId}
      and m.id = ${messageId} and m.media_state = 'stored'`)) as unknown as {
    content_type: string;
    size: string | number;
    sha256: string;
    media_file_name: string | null;
  }[];
  const row = rows[0];
  if (!row) return null;
  return {
    contentType: safeContentType(row.content_type) ?? 'application/octet-stream',
    size: Number(row.size),
    sha256: row.sha256,
    fileName: row.media_file_name,
  };
}

/** `inline`, with the file's name as an ASCII fallback and as RFC 8187 UTF-8. */
export function contentDisposition(fileName: string | null): string {
  const name = (fileName ?? '').replace(/[\u0000-\u001f\u007f]/g, '').trim();
  if (name === '') return 'inline';
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `inline; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** Whether an If-None-Match field names this entity tag (weak comparison, or `*`). */
export function matchesEtag(header: string, etag: string): boolean {
  return header
    .split(',')
    .map((tag) => tag.trim())
    .some((tag) => tag === '*' || tag.replace(/^W\//, '') === etag);
}

/**
 * The one byte range a Range field asks of `size` bytes: `{ start, end }` (inclusive),
 * 'unsatisfiable', or null when the field is to be ignored (not bytes, malformed, or
 * several ranges: the whole file then answers 200, as RFC 9110 14.2 allows).
 */
export function parseRange(
  header: string,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | null {
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return null;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return null;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? Infinity : Number(last);
  if (end < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}

/** The file's bytes `start..end` (inclusive), read MEDIA_READ_CHUNK at a time as the reader asks. */
function mediaStream(
  db: Db,
  workspaceId: string,
  messageId: string,
  start: number,
  end: number,
): ReadableStream<Uint8Array> {
  let offset = start;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (offset > end) {
          controller.close();
          return;
        }
        const length = Math.min(MEDIA_READ_CHUNK, end - offset + 1);
        const rows = (await db.execute(sql`
          select substring(bytes from ${offset + 1} for ${length}) as chunk
          from chat_media where workspace_id = ${workspaceId} and message_id = ${messageId}`)) as unknown as {
          chunk: Buffer;
        }[];
        const chunk = rows[0]?.chunk;
        // Deleted (or replaced) under the reader: end the answer short rather than pad it.
        if (!chunk || chunk.length !== length) {
          controller.error(new Error('chat media changed while it was read'));
          return;
        }
        offset += length;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if (offset > end) controller.close();
      },
    },
    { highWaterMark: 0 },
  );
}

async function serveMedia(request: Request, ctx: RouteContext): Promise<Response> {
  const { id = '', mid = '' } = ctx.params;
  const workspaceId = ctx.workspaceId;
  if (!workspaceId || !UUID.test(id) || !UUID.test(mid)) return notFound();
  const db = ctx.database.db;
  const media = await findMedia(db, workspaceId, id, mid);
  if (!media) return notFound();

  const etag = `"${media.sha256}"`;
  const headers = new Headers({
    'cache-control': 'private, max-age=31536000, immutable',
    etag,
    'content-security-policy': "sandbox; default-src 'none'",
    'x-content-type-options': 'nosniff',
    'accept-ranges': 'bytes',
  });
  const ifNoneMatch = request.headers.get('if-none-match');
  if (ifNoneMatch !== null && matchesEtag(ifNoneMatch, etag)) {
    return new Response(null, { status: 304, headers });
  }
  headers.set('content-type', media.contentType);
  headers.set('content-disposition', contentDisposition(media.fileName));

  let status = 200;
  let start = 0;
  let end = media.size - 1;
  const rangeHeader = request.headers.get('range');
  const ifRange = request.headers.get('if-range');
  // If-Range: the range only while the client's copy is this one (strong comparison).
  if (rangeHeader !== null && (ifRange === null || ifRange.trim() === etag)) {
    const range = parseRange(rangeHeader, media.size);
    if (range === 'unsatisfiable') {
      headers.delete('content-type');
      headers.delete('content-disposition');
      headers.set('content-range', `bytes */${media.size}`);
      return new Response(null, { status: 416, headers });
    }
    if (range) {
      status = 206;
      ({ start, end } = range);
      headers.set('content-range', `bytes ${start}-${end}/${media.size}`);
    }
  }
  const length = end - start + 1;
  headers.set('content-length', String(length));
  if (request.method === 'HEAD' || length === 0) return new Response(null, { status, headers });
  return new Response(mediaStream(db, workspaceId, mid, start, end), { status, headers });
}

/** The media route (not public: behind the host's chat:read guard and route bounds). */
export const mediaRoute: PluginRoute = {
  method: 'GET',
  path: 'conversations/:id/messages/:mid/media',
  handler: serveMedia,
};
