import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

/** Reads a request body, stopping as soon as it passes `maxBytes`. */
export async function readBody(
  req: IncomingMessage,
  maxBytes: number,
): Promise<Buffer | 'too-large'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return 'too-large';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return 'too-large';
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}

export function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  return headers;
}

export function toWebRequest(
  req: IncomingMessage,
  url: URL,
  body: Buffer | null,
  signal: AbortSignal | null,
  RequestClass: typeof Request = Request,
): Request {
  return new RequestClass(url, {
    method: req.method,
    headers: webHeaders(req),
    // A Buffer is a Uint8Array; the DOM typings only want an ArrayBuffer-backed one.
    body: body && body.length > 0 ? (body as unknown as BodyInit) : null,
    ...(signal ? { signal } : {}),
  });
}

function isStream(response: Response): boolean {
  return (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
}

export interface SendOptions {
  /** Set-Cookie values added to the answer. */
  cookies?: readonly string[];
  /** A JSON answer longer than `maxBytes` is replaced by `replacement` (same status). */
  cap?: { maxBytes: number; replacement: () => unknown };
}

/**
 * Writes a fetch Response to Node. A finite answer goes out in one write with its
 * length (piping it chunked costs a round of Nagle and delayed ACK per request); a
 * Server-Sent Events stream is piped as it comes.
 */
export async function sendWebResponse(
  res: ServerResponse,
  response: Response,
  options: SendOptions = {},
): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name === 'set-cookie') return;
    headers[name] = value;
  });
  const cookies = [...response.headers.getSetCookie(), ...(options.cookies ?? [])];
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  if (!response.body || !isStream(response)) {
    let body = response.body ? Buffer.from(await response.arrayBuffer()) : null;
    const isJson = (response.headers.get('content-type') ?? '').includes('json');
    if (body && options.cap && isJson && body.length > options.cap.maxBytes) {
      body = Buffer.from(JSON.stringify(options.cap.replacement()));
      headers['content-type'] = 'application/json; charset=utf-8';
    }
    headers['content-length'] = String(body?.length ?? 0);
    delete headers['transfer-encoding'];
    res.writeHead(response.status, headers);
    res.end(body);
    return;
  }
  res.writeHead(response.status, headers);
  // Yoga's answer body may be its ponyfill stream, which `Readable.fromWeb` refuses; any
  // ReadableStream's reader works.
  const body = readableOf(response.body);
  // A client that goes away cancels the stream, which ends a subscription's iterator.
  res.once('close', () => body.destroy());
  await new Promise<void>((resolve) => {
    body.once('error', () => {
      res.destroy();
      resolve();
    });
    res.once('close', resolve);
    body.pipe(res);
  });
}

/** A Node stream over any ReadableStream; destroying it cancels the source at once. */
function readableOf(stream: ReadableStream<Uint8Array>): Readable {
  const reader = stream.getReader();
  return new Readable({
    read() {
      reader.read().then(
        ({ done, value }) => void this.push(done ? null : value),
        (error: unknown) => this.destroy(error instanceof Error ? error : new Error(String(error))),
      );
    },
    destroy(error, callback) {
      // The client went away: cancelling the stream ends the subscription's iterator.
      reader.cancel().catch(() => {});
      callback(error);
    },
  });
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
