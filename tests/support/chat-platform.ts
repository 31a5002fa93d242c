// A fake of the WhatsApp Cloud API (Graph API v23.0) on loopback, for the chat plugin's tests.
// The service talks to it over real HTTP through SVC_CHAT_GRAPH_URL, so nothing in the service
// is mocked: requests, bearer checks, error bodies and media downloads go over the wire in the
// platform's own shapes. The second half builds the webhook bodies the platform POSTs to us.
import { createHash, createHmac, randomBytes, randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const GRAPH_VERSION = 'v23.0';

// ---------------------------------------------------------------------------------------------
// Error shapes

/** The `error` object of a Graph API error answer. */
export interface GraphError {
  message: string;
  type: string;
  code: number;
  error_subcode?: number;
  error_data?: { messaging_product: 'whatsapp'; details: string };
  error_user_title?: string;
  error_user_msg?: string;
  fbtrace_id: string;
}

/** How `failNextSends` makes the send endpoint fail; unset fields fall back to a generic 500. */
export interface SendFailure {
  status?: number;
  code?: number;
  /** Becomes `error_user_title`. */
  title?: string;
  /** The error's `message`, verbatim (the platform prefixes it with `(#code)`). */
  message?: string;
  details?: string;
  type?: string;
}

/** A sandbox number sending to a phone not on its allowed list. */
export const RECIPIENT_NOT_ALLOWED: SendFailure = {
  status: 400,
  code: 131030,
  title: 'Recipient phone number not in allowed list',
  message: '(#131030) Recipient phone number not in allowed list',
  details:
    'Recipient phone number not in allowed list: Add recipient phone number to recipient list and try again.',
};

/** A transient platform outage on one send. */
export const SERVICE_UNAVAILABLE: SendFailure = {
  status: 503,
  code: 131016,
  title: 'Service unavailable',
  message: '(#131016) Service unavailable',
  details: 'A service is temporarily unavailable. Please try again later.',
};

function fbtraceId(): string {
  return randomBytes(16).toString('base64url').slice(0, 23);
}

function graphError(fields: Omit<GraphError, 'fbtrace_id'>): { error: GraphError } {
  return { error: { ...fields, fbtrace_id: fbtraceId() } };
}

// ---------------------------------------------------------------------------------------------
// The platform server

/** What the service POSTed to `/{phone_number_id}/messages`, parsed when it was JSON. */
export interface SendBody {
  messaging_product?: string;
  recipient_type?: string;
  to?: string;
  type?: string;
  text?: { body?: string; preview_url?: boolean };
  context?: { message_id?: string };
  [key: string]: unknown;
}

/** One request to the send endpoint, whatever it was answered (see `status`). */
export interface SentRequest {
  phoneNumberId: string;
  body: SendBody;
  /** The body exactly as it arrived. */
  raw: string;
  authorization: string | undefined;
  /** The HTTP status the fake answered. */
  status: number;
  /** The `wamid.…` it answered with, on success. */
  messageId?: string;
}

export interface AddMediaInput {
  id?: string;
  bytes: Buffer | Uint8Array | string;
  mimeType: string;
  fileName?: string;
  /** The `file_size` the lookup reports instead of the real length (the download is unchanged). */
  reportSize?: number;
  /** The `url` the lookup answers instead of a minted download URL (a hostile or broken lookup). */
  url?: string;
}

/** The `{ id, mime_type, sha256 }` a webhook carries for a registered media object. */
export interface MediaPart {
  id: string;
  mime_type: string;
  /** Base64 in webhooks (the lookup answers hex), as the platform does. */
  sha256: string;
}

export interface ChatPlatformOptions {
  /** The bearer the fake accepts; default 'platform-access-token'. */
  accessToken?: string;
  /** How long a minted download URL works; default 5 minutes. */
  mediaUrlTtlMs?: number;
}

export interface ChatPlatform {
  /** `http://127.0.0.1:<port>/v23.0`, the value for SVC_CHAT_GRAPH_URL. */
  graphUrl: string;
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  accessToken: string;
  /** Every request to the send endpoint, in arrival order. */
  sent: SentRequest[];
  /** Resolves once `sent` holds `count` requests that were answered 200 (default within 5 s). */
  waitForSent(count: number, timeoutMs?: number): Promise<SentRequest[]>;
  /** The next `n` well-formed sends answer this platform error. */
  failNextSends(n: number, failure?: SendFailure): void;
  /** While down, every request answers 503 with an error body. */
  setDown(down: boolean): void;
  /** Registers a media object and answers its id. */
  addMedia(input: AddMediaInput): string;
  /** The media part a webhook message carries for a registered id. */
  mediaPart(id: string): MediaPart;
  /** Requests to `GET /v23.0/{id}` and to its download URL, whatever they were answered. */
  mediaLookups(id: string): number;
  mediaDownloads(id: string): number;
  /** Forgets sends, counters, queued failures and downtime; keeps media. */
  reset(): void;
  close(): Promise<void>;
}

interface StoredMedia {
  id: string;
  bytes: Buffer;
  mimeType: string;
  fileName?: string;
  reportSize?: number;
  url?: string;
}

const JSON_TYPE = 'application/json; charset=UTF-8';

function answerJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('error', reject);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** Media ids are long decimal strings on the platform. */
function mediaId(): string {
  return `${randomInt(1, 10)}${Array.from({ length: 15 }, () => randomInt(0, 10)).join('')}`;
}

/** `wamid.` and base64, the shape of the platform's message ids. */
export function messageId(): string {
  return `wamid.${randomBytes(35).toString('base64')}`;
}

/** The send body's first problem, in the platform's words, or undefined when it is sendable. */
function invalidSend(body: SendBody): string | undefined {
  if (body.messaging_product !== 'whatsapp') return 'The parameter messaging_product is required.';
  if (typeof body.to !== 'string' || body.to === '') return 'The parameter to is required.';
  // The platform treats a missing type as text.
  if ((body.type ?? 'text') === 'text' && typeof body.text?.body !== 'string') {
    return "The parameter text['body'] is required.";
  }
  return undefined;
}

export async function startChatPlatform(options: ChatPlatformOptions = {}): Promise<ChatPlatform> {
  const accessToken = options.accessToken ?? 'platform-access-token';
  const mediaUrlTtlMs = options.mediaUrlTtlMs ?? 5 * 60_000;
  const sent: SentRequest[] = [];
  const media = new Map<string, StoredMedia>();
  /** Download tokens the lookups minted: token → media id and expiry. */
  const tokens = new Map<string, { id: string; expires: number }>();
  const lookups = new Map<string, number>();
  const downloads = new Map<string, number>();
  const failures: SendFailure[] = [];
  let down = false;
  let onSent: (() => void)[] = [];
  let origin = '';

  const bump = (counter: Map<string, number>, id: string) =>
    counter.set(id, (counter.get(id) ?? 0) + 1);

  /** Answers 401 and false unless the request carries the expected bearer. */
  function authorized(req: IncomingMessage, res: ServerResponse): boolean {
    const header = req.headers.authorization;
    if (header === `Bearer ${accessToken}`) return true;
    const message = header
      ? 'Invalid OAuth access token - Cannot parse access token'
      : 'An active access token must be used to query information about the current user.';
    res.setHeader('www-authenticate', `OAuth "Facebook Platform" "invalid_token" "${message}"`);
    answerJson(res, 401, graphError({ message, type: 'OAuthException', code: 190 }));
    return false;
  }

  // Graph's own "Service temporarily unavailable" (code 2), answered while `down`.
  const outageBody = () =>
    graphError({ message: 'Service temporarily unavailable', type: 'OAuthException', code: 2 });
  const outage = (res: ServerResponse) => answerJson(res, 503, outageBody());

  async function send(req: IncomingMessage, res: ServerResponse, phoneNumberId: string) {
    const raw = await readBody(req);
    let body: SendBody = {};
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed && typeof parsed === 'object') body = parsed as SendBody;
    } catch {
      // Left empty: the validation below refuses it as the platform would.
    }
    const record: SentRequest = {
      phoneNumberId,
      body,
      raw,
      authorization: req.headers.authorization,
      status: 0,
    };
    sent.push(record);
    const answer = (status: number, payload: unknown) => {
      record.status = status;
      answerJson(res, status, payload);
      for (const wake of onSent) wake();
    };
    if (down) return answer(503, outageBody());
    if (!authorized(req, res)) {
      record.status = 401;
      return;
    }
    const problem = invalidSend(body);
    if (problem) {
      return answer(
        400,
        graphError({ message: `(#100) ${problem}`, type: 'OAuthException', code: 100 }),
      );
    }
    const failure = failures.shift();
    if (failure) {
      const code = failure.code ?? 131000;
      const title = failure.title ?? 'Something went wrong';
      return answer(
        failure.status ?? 500,
        graphError({
          message: failure.message ?? `(#${code}) ${title}`,
          type: failure.type ?? 'OAuthException',
          code,
          error_data: { messaging_product: 'whatsapp', details: failure.details ?? title },
          error_user_title: title,
        }),
      );
    }
    record.messageId = messageId();
    answer(200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: body.to, wa_id: String(body.to).replace(/\D/g, '') }],
      messages: [{ id: record.messageId }],
    });
  }

  function lookup(req: IncomingMessage, res: ServerResponse, id: string) {
    bump(lookups, id);
    if (down) return outage(res);
    if (!authorized(req, res)) return;
    const item = media.get(id);
    if (!item) {
      return answerJson(
        res,
        404,
        graphError({
          message: `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
          type: 'GraphMethodException',
          code: 100,
          error_subcode: 33,
        }),
      );
    }
    const token = randomBytes(18).toString('base64url');
    tokens.set(token, { id, expires: Date.now() + mediaUrlTtlMs });
    answerJson(res, 200, {
      messaging_product: 'whatsapp',
      url: item.url ?? `${origin}/media-download/${encodeURIComponent(id)}?token=${token}`,
      mime_type: item.mimeType,
      sha256: createHash('sha256').update(item.bytes).digest('hex'),
      file_size: item.reportSize ?? item.bytes.length,
      id,
    });
  }

  function download(req: IncomingMessage, res: ServerResponse, id: string, token: string | null) {
    bump(downloads, id);
    if (down) return outage(res);
    if (!authorized(req, res)) return;
    const minted = token ? tokens.get(token) : undefined;
    const item = media.get(id);
    // A wrong, foreign or expired token looks like a missing object, as the CDN answers.
    if (!item || !minted || minted.id !== id || minted.expires <= Date.now()) {
      return answerJson(
        res,
        404,
        graphError({ message: 'URL signature expired', type: 'OAuthException', code: 100 }),
      );
    }
    res.writeHead(200, {
      'content-type': item.mimeType,
      'content-length': item.bytes.length,
      ...(item.fileName
        ? { 'content-disposition': `attachment; filename="${item.fileName}"` }
        : {}),
    });
    res.end(item.bytes);
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://platform');
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const handle = async () => {
      if (parts[0] === GRAPH_VERSION && parts.length === 3 && parts[2] === 'messages') {
        if (req.method === 'POST') return send(req, res, parts[1]!);
      } else if (parts[0] === GRAPH_VERSION && parts.length === 2 && req.method === 'GET') {
        return lookup(req, res, parts[1]!);
      } else if (
        parts[0] === 'media-download' &&
        parts.length === 2 &&
        (req.method === 'GET' || req.method === 'HEAD')
      ) {
        return download(req, res, parts[1]!, url.searchParams.get('token'));
      }
      await readBody(req);
      if (down) return outage(res);
      answerJson(
        res,
        400,
        graphError({
          message: `Unknown path components: ${url.pathname}`,
          type: 'OAuthException',
          code: 2500,
        }),
      );
    };
    handle().catch((error: unknown) => {
      if (!res.headersSent) answerJson(res, 500, { error: String(error) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const succeeded = () => sent.filter((request) => request.status === 200);

  return {
    graphUrl: `${origin}/${GRAPH_VERSION}`,
    origin,
    accessToken,
    sent,
    waitForSent(count, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const done = succeeded();
          if (done.length < count) return false;
          clearTimeout(timer);
          onSent = onSent.filter((wake) => wake !== check);
          resolve(done);
          return true;
        };
        const timer = setTimeout(() => {
          onSent = onSent.filter((wake) => wake !== check);
          reject(new Error(`${succeeded().length} of ${count} sends arrived in ${timeoutMs} ms`));
        }, timeoutMs);
        if (!check()) onSent.push(check);
      });
    },
    failNextSends(n, failure = {}) {
      for (let i = 0; i < n; i += 1) failures.push(failure);
    },
    setDown(value) {
      down = value;
    },
    addMedia(input) {
      const id = input.id ?? mediaId();
      media.set(id, {
        id,
        bytes: Buffer.from(input.bytes),
        mimeType: input.mimeType,
        fileName: input.fileName,
        reportSize: input.reportSize,
        url: input.url,
      });
      return id;
    },
    mediaPart(id) {
      const item = media.get(id);
      if (!item) throw new Error(`no media ${id} on the fake platform`);
      return {
        id,
        mime_type: item.mimeType,
        sha256: createHash('sha256').update(item.bytes).digest('base64'),
      };
    },
    mediaLookups: (id) => lookups.get(id) ?? 0,
    mediaDownloads: (id) => downloads.get(id) ?? 0,
    reset() {
      sent.length = 0;
      failures.length = 0;
      lookups.clear();
      downloads.clear();
      down = false;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Webhooks, the platform side

/** The `X-Hub-Signature-256` value: HMAC-SHA256 of the raw body under the app secret. */
export function signBody(appSecret: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`;
}

/** How a webhook reaches the service: fetch over a socket, or a test service's `request`. */
export type SendRequest = (url: string, init?: RequestInit) => Promise<Response>;

export interface PostWebhookOptions {
  appSecret: string;
  /** fetch unless given (a test service's `request` reaches it in-process). */
  via?: SendRequest;
  /** Overrides the computed X-Hub-Signature-256; null sends no signature at all. */
  signature?: string | null;
}

/**
 * POSTs a webhook as the platform does. A string payload goes out byte for byte (to test that
 * the receiver verifies the raw body, not a re-serialisation); anything else as JSON.
 */
export async function postWebhook(
  url: string,
  payload: unknown,
  options: PostWebhookOptions,
): Promise<{ status: number; text: string }> {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'facebookexternalua',
  };
  if (options.signature !== null) {
    headers['x-hub-signature-256'] = options.signature ?? signBody(options.appSecret, raw);
    // The platform also sends the legacy SHA-1 header; receivers must not rely on it.
    headers['x-hub-signature'] =
      `sha1=${createHmac('sha1', options.appSecret).update(raw).digest('hex')}`;
  }
  const send = options.via ?? fetch;
  const response = await send(url, { method: 'POST', headers, body: raw });
  return { status: response.status, text: await response.text() };
}

/** The subscription handshake: GET with hub.mode, hub.verify_token and hub.challenge. */
export async function verifyWebhook(
  url: string,
  options: { verifyToken: string; challenge?: string; mode?: string; via?: SendRequest },
): Promise<{ status: number; text: string }> {
  const target = new URL(url);
  target.searchParams.set('hub.mode', options.mode ?? 'subscribe');
  target.searchParams.set('hub.verify_token', options.verifyToken);
  target.searchParams.set('hub.challenge', options.challenge ?? String(randomInt(1, 2 ** 31)));
  const response = await (options.via ?? fetch)(target.toString());
  return { status: response.status, text: await response.text() };
}

// ---------------------------------------------------------------------------------------------
// Webhook payloads

export interface MessageError {
  code: number;
  title: string;
  message: string;
  error_data: { details: string };
  href?: string;
}

export interface WebhookContact {
  profile: { name: string };
  wa_id: string;
}

export interface InboundMessageJson {
  from: string;
  id: string;
  timestamp: string;
  type: string;
  context?: { from: string; id: string };
  [content: string]: unknown;
}

export interface StatusJson {
  id: string;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  timestamp: string;
  recipient_id: string;
  conversation?: { id: string; expiration_timestamp?: string; origin: { type: string } };
  pricing?: { billable: boolean; pricing_model: string; category: string; type?: string };
  errors?: MessageError[];
}

export interface WebhookValue {
  messaging_product: 'whatsapp';
  metadata: { display_phone_number: string; phone_number_id: string };
  contacts?: WebhookContact[];
  messages?: InboundMessageJson[];
  statuses?: StatusJson[];
}

export interface WebhookPayload {
  object: 'whatsapp_business_account';
  entry: { id: string; changes: { field: 'messages'; value: WebhookValue }[] }[];
}

/** Where a payload comes from: the business account and the number that received it. */
export interface WebhookSource {
  phoneNumberId: string;
  /** The WhatsApp Business Account id, the entry's id. */
  wabaId?: string;
  displayPhoneNumber?: string;
}

export const DEFAULT_WABA_ID = '102290129340398';
export const DEFAULT_DISPLAY_PHONE_NUMBER = '15550783881';

/** Unix seconds as the platform's string; a number is taken as seconds already. */
function unixSeconds(at: number | Date | undefined): string {
  if (at === undefined) return String(Math.floor(Date.now() / 1000));
  if (at instanceof Date) return String(Math.floor(at.getTime() / 1000));
  return String(Math.floor(at));
}

function envelope(
  source: WebhookSource,
  value: Omit<WebhookValue, 'messaging_product' | 'metadata'>,
): WebhookPayload {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: source.wabaId ?? DEFAULT_WABA_ID,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: {
                display_phone_number: source.displayPhoneNumber ?? DEFAULT_DISPLAY_PHONE_NUMBER,
                phone_number_id: source.phoneNumberId,
              },
              ...value,
            },
          },
        ],
      },
    ],
  };
}

export interface SharedContact {
  name: { formatted_name: string; first_name?: string; last_name?: string };
  phones: { phone: string; wa_id?: string; type: string }[];
  emails?: { email: string; type: string }[];
}

/** Each message type and its content, as the platform names them. */
export type InboundContent =
  | { type: 'text'; text: { body: string } }
  | { type: 'image'; image: MediaPart & { caption?: string } }
  | { type: 'audio'; audio: MediaPart & { voice?: boolean } }
  | { type: 'video'; video: MediaPart & { caption?: string } }
  | { type: 'document'; document: MediaPart & { caption?: string; filename?: string } }
  | { type: 'sticker'; sticker: MediaPart & { animated?: boolean } }
  | {
      type: 'location';
      location: { latitude: number; longitude: number; name?: string; address?: string };
    }
  | { type: 'contacts'; contacts: SharedContact[] }
  | {
      type: 'interactive';
      interactive:
        | { type: 'button_reply'; button_reply: { id: string; title: string } }
        | {
            type: 'list_reply';
            list_reply: { id: string; title: string; description?: string };
          };
    }
  | { type: 'button'; button: { text: string; payload: string } }
  | { type: 'reaction'; reaction: { message_id: string; emoji?: string } }
  /** `errors` defaults to the platform's 131051 "Message type unknown". */
  | { type: 'unsupported'; errors?: MessageError[] };

export type InboundMessageOptions = WebhookSource & {
  from: string;
  profileName: string;
  id?: string;
  /** Unix seconds or a Date; default now. */
  timestamp?: number | Date;
  /** The message this one answers (button and interactive replies carry it). */
  context?: { from: string; id: string };
} & InboundContent;

export function unsupportedTypeError(): MessageError {
  return {
    code: 131051,
    title: 'Message type unknown',
    message: 'Message type unknown',
    error_data: { details: 'Message type is currently not supported.' },
  };
}

/** The option keys that are not message content. */
const BASE_KEYS = new Set([
  'phoneNumberId',
  'wabaId',
  'displayPhoneNumber',
  'from',
  'profileName',
  'id',
  'timestamp',
  'context',
  'type',
]);

/** One inbound message from `from`, as the platform delivers it. */
export function inboundMessage(options: InboundMessageOptions): WebhookPayload {
  const { phoneNumberId, wabaId, displayPhoneNumber, from, profileName, id, timestamp, context } =
    options;
  const message: InboundMessageJson = {
    from,
    id: id ?? messageId(),
    timestamp: unixSeconds(timestamp),
    type: options.type,
  };
  if (context) message.context = context;
  for (const [key, value] of Object.entries(options)) {
    if (!BASE_KEYS.has(key)) message[key] = value;
  }
  if (options.type === 'unsupported' && !options.errors) message.errors = [unsupportedTypeError()];
  return envelope(
    { phoneNumberId, wabaId, displayPhoneNumber },
    { contacts: [{ profile: { name: profileName }, wa_id: from }], messages: [message] },
  );
}

export interface StatusUpdateOptions extends WebhookSource {
  messageId: string;
  recipientId: string;
  status: StatusJson['status'];
  timestamp?: number | Date;
  /** Default for `failed`: a generic 131000. */
  errors?: MessageError[];
  /** Default for sent and delivered: a service conversation; null leaves it out. */
  conversation?: StatusJson['conversation'] | null;
  /** Default for sent and delivered: billable service pricing; null leaves it out. */
  pricing?: StatusJson['pricing'] | null;
}

/** The error a free-form reply gets outside the 24-hour customer-service window. */
export function windowClosedError(): MessageError {
  return {
    code: 131047,
    title: 'Re-engagement message',
    message: 'Re-engagement message',
    error_data: {
      details:
        'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
    },
    href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
  };
}

/** A delivery status for a message the service sent. */
export function statusUpdate(options: StatusUpdateOptions): WebhookPayload {
  const status: StatusJson = {
    id: options.messageId,
    status: options.status,
    timestamp: unixSeconds(options.timestamp),
    recipient_id: options.recipientId,
  };
  // The platform reports billing on sent and delivered; tolerant parsers must skip it.
  const billed = options.status === 'sent' || options.status === 'delivered';
  const conversation =
    options.conversation === undefined && billed
      ? { id: randomBytes(16).toString('hex'), origin: { type: 'service' } }
      : options.conversation;
  if (conversation) status.conversation = conversation;
  const pricing =
    options.pricing === undefined && billed
      ? { billable: true, pricing_model: 'PMP', category: 'service', type: 'free_customer_service' }
      : options.pricing;
  if (pricing) status.pricing = pricing;
  if (options.errors) status.errors = options.errors;
  else if (options.status === 'failed') {
    status.errors = [
      {
        code: 131000,
        title: 'Something went wrong',
        message: 'Something went wrong',
        error_data: { details: 'Message failed to send due to an unknown error.' },
      },
    ];
  }
  return envelope(options, { statuses: [status] });
}

/**
 * Several payloads as one webhook body, as the platform batches them: entries of the same
 * business account share one entry, their changes in order.
 */
export function batch(...payloads: WebhookPayload[]): WebhookPayload {
  const entries = new Map<string, WebhookPayload['entry'][number]>();
  for (const payload of payloads) {
    for (const entry of payload.entry) {
      const existing = entries.get(entry.id);
      if (existing) existing.changes.push(...entry.changes);
      else entries.set(entry.id, { id: entry.id, changes: [...entry.changes] });
    }
  }
  return { object: 'whatsapp_business_account', entry: [...entries.values()] };
}
