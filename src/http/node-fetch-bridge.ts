import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import {
  acceptedEncoding,
  compress,
  varyOnEncoding,
  worthCompressing,
  type StaticAnswer,
} from './compression.js';

/** Reads a request body, stopping as soon as it passes `maxBytes`. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | 'too-large'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve('too-large');
  // A small body usually arrives with its head: by the time it is read, Node's parser has
  // buffered all of it and ended the stream. It is taken at once, with no listeners.
  if (req.complete && !req.readableFlowing && req.readableLength <= maxBytes) {
    return Promise.resolve((req.read() as Buffer | null) ?? Buffer.alloc(0));
  }
  // Listeners rather than the stream's async iterator, which costs a promise per chunk.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        done();
        // As leaving the iterator did: the rest of the body is not read.
        req.destroy();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      done();
      reject(error);
    };
    const onClose = () => {
      done();
      reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    };
    function done() {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
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

/**
 * The request's fields as a record, a repeated field's values joined (Node already joins
 * all but a few). Yoga's Request class reads a record lazily; a Headers built here would
 * be copied into its own on first read.
 */
export function headerRecord(req: IncomingMessage): Record<string, string> {
  const record: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) record[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return record;
}

export function toWebRequest(
  req: IncomingMessage,
  url: URL,
  body: Buffer | null,
  signal: AbortSignal | null,
  RequestClass: typeof Request = Request,
  headers?: Headers,
): Request {
  return new RequestClass(url, {
    method: req.method,
    headers: headers ?? (RequestClass === Request ? webHeaders(req) : headerRecord(req)),
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
  /**
   * An answer that declares its own Content-Length is sent as it is, piped and never
   * compressed (a plugin's file download: a large file is not held whole, and the byte
   * offsets of a 206 stay true). So is an attachment of no declared length (a file made
   * while it is sent, an export): piped chunk by chunk as it is produced, never held whole.
   */
  sized?: boolean;
}

type NodeHeaders = Record<string, string | string[]>;

/** Framing is the bridge's to decide: one write with its length, or a piped stream. */
const FRAMING_FIELDS = new Set(['content-length', 'transfer-encoding']);

/**
 * The answer's fields as Node should write them, one entry per lowercased name. Yoga's
 * ponyfill Headers keeps the case a plugin wrote (its CORS plugin answers OPTIONS with
 * `Content-Length`), and Node writes an object's keys as they are, so two spellings of
 * one name would both go out; strict clients (undici) refuse a doubled Content-Length.
 */
function nodeHeaders(response: Response, cookies: readonly string[]): NodeHeaders {
  const headers: NodeHeaders = {};
  response.headers.forEach((_value, name) => {
    const key = name.toLowerCase();
    if (key === 'set-cookie' || FRAMING_FIELDS.has(key)) return;
    // `get` finds the value whichever spelling holds it.
    headers[key] = response.headers.get(key) ?? '';
  });
  const allCookies = [...response.headers.getSetCookie(), ...cookies];
  if (allCookies.length > 0) headers['set-cookie'] = allCookies;
  return headers;
}

/**
 * RFC 9110 8.6 and 15.3.5: a 204 has no content and may not carry Content-Length; a 304's
 * would have to be the 200's length, which the bridge does not know, so it sends none.
 */
function hasNoContent(status: number): boolean {
  return status === 204 || status === 304;
}

/**
 * Writes a finite answer in one write with its length (piping it chunked costs a round of
 * Nagle and delayed ACK per request), or with no length and no body when its status
 * allows none.
 */
async function sendWhole(
  res: ServerResponse,
  response: Response,
  headers: NodeHeaders,
  cap: SendOptions['cap'],
): Promise<void> {
  if (hasNoContent(response.status)) {
    await response.body?.cancel();
    res.writeHead(response.status, headers);
    res.end();
    return;
  }
  const isJson = (response.headers.get('content-type') ?? '').includes('json');
  // A JSON answer is read as the text Yoga made, and a small one is written as that text:
  // Node then sends the head and the body in one write.
  const body: Buffer | string | null = !response.body
    ? null
    : isJson
      ? await response.text()
      : Buffer.from(await response.arrayBuffer());
  await writeWhole(res, response.status, headers, body, isJson, cap);
}

/**
 * Writes `body` with its length, held to `cap` if JSON, compressed when worth it: at once
 * when not compressed (no promise to wait on).
 */
function writeWhole(
  res: ServerResponse,
  status: number,
  headers: NodeHeaders,
  body: Buffer | string | null,
  isJson: boolean,
  cap: SendOptions['cap'],
): Promise<void> | undefined {
  let length = typeof body === 'string' ? Buffer.byteLength(body) : (body?.length ?? 0);
  if (body !== null && cap && isJson && length > cap.maxBytes) {
    body = JSON.stringify(cap.replacement());
    length = Buffer.byteLength(body);
    headers['content-type'] = 'application/json; charset=utf-8';
  }
  if (body !== null && worthCompressing(String(headers['content-type'] ?? ''), length)) {
    const plain = typeof body === 'string' ? Buffer.from(body) : body;
    return encoded(res, headers, plain).then((coded) => {
      headers['content-length'] = String(coded.length);
      res.writeHead(status, headers);
      res.end(coded);
    });
  }
  headers['content-length'] = String(length);
  res.writeHead(status, headers);
  res.end(body);
  return undefined;
}

/**
 * Writes a JSON answer made as text (the graph's answer without errors): with its
 * cookies, held to `cap`, compressed when worth it, as {@link sendWebResponse} writes
 * the same answer as a Response. Written at once unless compressed.
 */
export function sendJsonText(
  res: ServerResponse,
  text: string,
  contentType: string,
  options: Omit<SendOptions, 'sized'> = {},
): Promise<void> | undefined {
  const headers: NodeHeaders = { 'content-type': contentType };
  if (options.cookies?.length) headers['set-cookie'] = [...options.cookies];
  return writeWhole(res, 200, headers, text, true, options.cap);
}

/**
 * The body in the coding the request accepts, when the answer is large and compressible
 * enough (compression.ts); an answer that could be compressed names Accept-Encoding in
 * Vary either way. Any cap has already judged the plain body.
 */
async function encoded(res: ServerResponse, headers: NodeHeaders, body: Buffer): Promise<Buffer> {
  const type = String(headers['content-type'] ?? '');
  if (headers['content-encoding'] || !worthCompressing(type, body.length)) return body;
  varyOnEncoding(res, headers);
  const encoding = acceptedEncoding(res.req?.headers['accept-encoding']);
  if (!encoding) return body;
  headers['content-encoding'] = encoding;
  return compress(body, encoding);
}

/**
 * Writes an answer that never changes (the interactive page) in the coding the request
 * accepts, compressed once for the process (compression.ts), or plain.
 */
export async function sendStaticAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  answer: StaticAnswer,
): Promise<void> {
  const headers: NodeHeaders = { ...answer.headers, 'content-type': answer.contentType };
  let body = answer.plain;
  if (worthCompressing(answer.contentType, body.length)) {
    varyOnEncoding(res, headers);
    const encoding = acceptedEncoding(req.headers['accept-encoding']);
    if (encoding) {
      body = await answer.encoded(encoding);
      headers['content-encoding'] = encoding;
    }
  }
  headers['content-length'] = String(body.length);
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/**
 * Writes a fetch Response to Node: a finite answer whole, a Server-Sent Events stream
 * piped as it comes.
 */
export async function sendWebResponse(
  res: ServerResponse,
  response: Response,
  options: SendOptions = {},
): Promise<void> {
  const headers = nodeHeaders(response, options.cookies ?? []);
  const length = response.headers.get('content-length');
  if (options.sized && length !== null && /^\d+$/.test(length)) {
    headers['content-length'] = length;
    res.writeHead(response.status, headers);
    if (!response.body || hasNoContent(response.status) || res.req?.method === 'HEAD') {
      await response.body?.cancel();
      res.end();
      return;
    }
    return pipeBody(res, response.body);
  }
  const attachment = /^\s*attachment\b/i.test(response.headers.get('content-disposition') ?? '');
  if (options.sized && attachment && response.body && !hasNoContent(response.status)) {
    res.writeHead(response.status, headers);
    if (res.req?.method === 'HEAD') {
      await response.body.cancel();
      res.end();
      return;
    }
    return pipeBody(res, response.body);
  }
  if (!response.body || !isStream(response)) {
    return sendWhole(res, response, headers, options.cap);
  }
  res.writeHead(response.status, headers);
  return pipeBody(res, response.body);
}

/** Pipes a body to the client; a client that goes away cancels it (ending a subscription). */
async function pipeBody(res: ServerResponse, stream: ReadableStream<Uint8Array>): Promise<void> {
  // Yoga's answer body may be its ponyfill stream, which `Readable.fromWeb` refuses; any
  // ReadableStream's reader works.
  const body = readableOf(stream);
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

/**
 * Writes a JSON answer with exactly one Content-Type and Content-Length: `headers` are
 * lowercased first, so a caller's `Content-Type` replaces ours instead of doubling it.
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  const fields: NodeHeaders = { 'content-type': 'application/json; charset=utf-8' };
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (!FRAMING_FIELDS.has(key)) fields[key] = value;
  }
  fields['content-length'] = String(Buffer.byteLength(text));
  res.writeHead(status, fields);
  res.end(text);
}
