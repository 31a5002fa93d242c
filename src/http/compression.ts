import type { ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

export type ContentEncoding = 'br' | 'gzip';

/**
 * Answers up to this many bytes go out as they are. Below it an answer fits the first
 * round trip of a new connection (an initial congestion window of ten segments, about
 * 14 KB) whether compressed or not, and a small JSON answer is what the graph answers most:
 * compressing one costs 0.1 to 0.2 ms of CPU, about what the rest of the request costs.
 */
export const COMPRESS_MIN_BYTES = 16 * 1024;

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/**
 * How hard to work: `answer` for one made per request (brotli quality 4, gzip level 6:
 * a few hundred microseconds for tens of kilobytes), `static` for one compressed once and
 * kept (brotli quality 5: the 9 MB interactive page in about 0.7 s; quality 11 would take
 * over 20 s for 10% less).
 */
export type CompressionEffort = 'answer' | 'static';

const BROTLI_QUALITY: Record<CompressionEffort, number> = { answer: 4, static: 5 };

/** Compresses off the event loop (zlib's work runs in libuv's thread pool). */
export function compress(
  body: Buffer,
  encoding: ContentEncoding,
  effort: CompressionEffort = 'answer',
): Promise<Buffer> {
  if (encoding === 'gzip') return gzipped(body);
  return brotli(body, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY[effort],
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    },
  });
}

/** Each coding's weight in an Accept-Encoding field (RFC 9110 12.5.3), lowercased. */
function weights(header: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const item of header.split(',')) {
    const [coding, ...params] = item.split(';').map((part) => part.trim().toLowerCase());
    if (!coding) continue;
    let weight = 1;
    for (const param of params) {
      const q = /^q\s*=\s*([0-9.]+)$/.exec(param);
      if (q) weight = Number(q[1]);
    }
    found.set(coding, Number.isFinite(weight) ? weight : 0);
  }
  return found;
}

/**
 * The coding to answer with: brotli or gzip, whichever the client weighs higher (brotli
 * on a tie, as it is smaller), `*` standing for any coding it does not name; null for
 * none (no field, only `identity`, or weight 0).
 */
export function acceptedEncoding(header: string | string[] | undefined): ContentEncoding | null {
  if (!header) return null;
  const found = weights(Array.isArray(header) ? header.join(',') : header);
  const weightOf = (coding: string) => found.get(coding) ?? found.get('*') ?? 0;
  const br = weightOf('br');
  const gz = weightOf('gzip');
  if (br > 0 && br >= gz) return 'br';
  return gz > 0 ? 'gzip' : null;
}

/**
 * Whether a content type is worth compressing: text (not an event stream, which is
 * written as it happens and must reach the client frame by frame), JSON, JavaScript and
 * XML. Media types that are already compressed, and multipart answers, are not.
 */
export function isCompressible(contentType: string): boolean {
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (type === 'text/event-stream') return false;
  return (
    type.startsWith('text/') ||
    /^application\/(json|javascript|xml|[^/]+\+json|[^/]+\+xml)$/.test(type) ||
    type === 'image/svg+xml'
  );
}

/** Whether an answer is compressed when the client accepts a coding (no status lacking content). */
export function worthCompressing(contentType: string, byteLength: number): boolean {
  return byteLength > COMPRESS_MIN_BYTES && isCompressible(contentType);
}

/**
 * Adds `Accept-Encoding` to the answer's Vary, after any the answer already names (CORS
 * puts `Origin` on `res` before the answer is written; writeHead's fields would replace it).
 */
export function varyOnEncoding(res: ServerResponse, headers: Record<string, unknown>): void {
  const named = [res.getHeader('vary'), headers['vary']]
    .flat()
    .filter((value): value is string => typeof value === 'string' && value !== '');
  headers['vary'] = [...named, 'Accept-Encoding'].join(', ');
}

/**
 * An answer that never changes while the process runs, kept plain and, once a client
 * first asks for a coding, compressed in it: each coding is compressed once (concurrent
 * first requests share the work) and reused.
 */
export interface StaticAnswer {
  contentType: string;
  /** Further fields sent with it (`cache-control`). */
  headers: Record<string, string>;
  plain: Buffer;
  encoded(encoding: ContentEncoding): Promise<Buffer>;
}

export function createStaticAnswer(
  body: string | Buffer,
  contentType: string,
  headers: Record<string, string> = {},
): StaticAnswer {
  const plain = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const kept = new Map<ContentEncoding, Promise<Buffer>>();
  return {
    contentType,
    headers,
    plain,
    encoded(encoding) {
      let answer = kept.get(encoding);
      if (!answer) {
        answer = compress(plain, encoding, 'static');
        // A failure is not kept: the next request tries again.
        answer.catch(() => kept.delete(encoding));
        kept.set(encoding, answer);
      }
      return answer;
    },
  };
}
