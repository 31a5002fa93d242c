import { request, type IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

export interface RawHttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The content exactly as it came, still in its Content-Encoding. */
  body: Buffer;
}

/**
 * One request with exactly the headers given (fetch would add Accept-Encoding and decode
 * the answer), on its own connection. With `headOnly` it answers once the head arrives
 * and goes away, as a client leaving an event stream.
 */
export function rawHttp(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    headOnly?: boolean;
  } = {},
): Promise<RawHttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: options.method ?? 'GET',
      headers: options.headers ?? {},
      agent: false,
    });
    req.once('error', reject);
    req.once('response', (res) => {
      const answer = { status: res.statusCode ?? 0, headers: res.headers };
      if (options.headOnly) {
        req.destroy();
        return resolve({ ...answer, body: Buffer.alloc(0) });
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('error', reject);
      res.once('end', () => resolve({ ...answer, body: Buffer.concat(chunks) }));
    });
    req.end(options.body);
  });
}

/** POSTs a graph operation as JSON with exactly the headers given. */
export function rawGraph(
  url: string,
  operation: { query: string; variables?: Record<string, unknown>; operationName?: string },
  headers: Record<string, string> = {},
): Promise<RawHttpAnswer> {
  return rawHttp(`${url}/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(operation),
  });
}

/** The content with its Content-Encoding undone. */
export function decoded(answer: RawHttpAnswer): Buffer {
  const encoding = answer.headers['content-encoding'];
  if (encoding === 'br') return brotliDecompressSync(answer.body);
  if (encoding === 'gzip') return gunzipSync(answer.body);
  if (encoding === undefined) return answer.body;
  throw new Error(`unexpected Content-Encoding ${encoding}`);
}
