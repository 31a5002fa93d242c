import { GraphQLError, type ASTNode } from 'graphql';

/** The error codes of SPEC 7.1. */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'UNAUTHORIZED'
  | 'VALIDATION'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'COMPLEXITY_LIMIT_EXCEEDED'
  | 'INTERNAL'
  // Not in SPEC 7.1: the database is out of reach (docs/errors.md, docs/decisions.md).
  | 'UNAVAILABLE';

export type Meta = Record<string, unknown>;

interface ReasonSpec<M extends Meta = Meta> {
  code: ErrorCode;
  message: string | ((meta: M) => string);
}

function reason<M extends Meta = Record<string, never>>(
  code: ErrorCode,
  message: ReasonSpec<M>['message'],
): ReasonSpec<M> {
  return { code, message };
}

/** Characters of outside text a message or a meta value repeats (`printable`'s default). */
export const ECHO_MAX = 100;
/** Characters of a whole message: a reason's message naming several echoed values stays short. */
export const MESSAGE_MAX = 500;

/**
 * Outside text as a message, a log line or an admin's list may repeat it: control characters
 * (NUL included) and unpaired surrogates written as `\uXXXX`, and at most `max` characters,
 * the cut marked with `…`. The text stays recognisable; its bytes never reach a client raw.
 */
export function printable(text: string, max = ECHO_MAX): string {
  let out = '';
  let count = 0;
  for (const char of text) {
    if (count === max) return `${out}…`;
    const code = char.codePointAt(0)!;
    const unsafe =
      code < 0x20 || (code >= 0x7f && code < 0xa0) || (code >= 0xd800 && code <= 0xdfff);
    out += unsafe ? `\\u${code.toString(16).padStart(4, '0')}` : char;
    count += 1;
  }
  return out;
}

/** Every string of a meta value made `printable`, to a few levels (meta is small by design). */
function printableMeta(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return printable(value);
  if (depth > 3 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => printableMeta(item, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, printableMeta(item, depth + 1)]),
  );
}

/** A count of seconds as a message says it: `1 second`, `3 seconds`. */
export function seconds(count: number): string {
  return count === 1 ? '1 second' : `${count} seconds`;
}

/**
 * Every reason of the core (SPEC 7.3), with its code, meta shape and message. Clients
 * match `reason` and read `meta`; messages may change, reasons never do.
 */
export const coreReasons = {
  authentication_required: reason('UNAUTHENTICATED', 'authentication required'),
  credentials_invalid: reason('UNAUTHENTICATED', 'email or password is wrong'),
  rate_limited: reason<{ retryAfter: number }>(
    'RATE_LIMITED',
    (m) => `too many attempts; try again in ${seconds(m.retryAfter)}`,
  ),
  scope_missing: reason<{ scope: string }>('UNAUTHORIZED', (m) => `scope required: ${m.scope}`),
  capability_missing: reason<{ scope: string | null; capability: string }>(
    'UNAUTHORIZED',
    'admin required',
  ),
  contact_name_required: reason('VALIDATION', 'a contact needs a name'),
  identity_channel_required: reason('VALIDATION', 'an identity needs a channel'),
  identity_identifier_required: reason('VALIDATION', 'an identity needs an identifier'),
  // Beyond the spec: an identifier given that names no one on its channel (a phone number
  // without a digit), told apart from one left out (docs/decisions.md).
  identity_identifier_malformed: reason<{ channel: string }>('VALIDATION', (m) =>
    m.channel === 'phone'
      ? 'a phone number needs at least one digit'
      : `that identifier names no one on the ${m.channel} channel`,
  ),
  identity_taken: reason<{ ownerContactId: string }>(
    'CONFLICT',
    'that identity belongs to another contact',
  ),
  channel_not_writable: reason('VALIDATION', 'that channel accepts no writes'),
  identity_not_found: reason('NOT_FOUND', 'identity not found'),
  contact_not_found: reason('NOT_FOUND', 'contact not found'),
  task_title_required: reason('VALIDATION', 'a task needs a title'),
  task_priority_unknown: reason<{ allowed: string[] }>(
    'VALIDATION',
    (m) => `priority must be one of ${m.allowed.join(', ')}`,
  ),
  task_status_unknown: reason<{ allowed: string[] }>(
    'VALIDATION',
    (m) => `status must be one of ${m.allowed.join(', ')}`,
  ),
  task_filter_choice_required: reason(
    'VALIDATION',
    'tasks take exactly one of date, dueBefore or contactId',
  ),
  task_not_found: reason('NOT_FOUND', 'task not found'),
  origin_source_required: reason('VALIDATION', 'an origin event needs a source'),
  event_unknown: reason<{ event: string }>('VALIDATION', (m) => `unknown event: ${m.event}`),
  webhook_url_invalid: reason('VALIDATION', 'the webhook URL does not parse'),
  // Meta beyond the spec's (none): the URL's host, the refused address (the host itself
  // for an IP literal) and whether an SVC_WEBHOOK_ALLOWED_HOSTS entry could open it.
  webhook_url_internal: reason<{ host: string; address: string; allowable: boolean }>(
    'VALIDATION',
    (m) => {
      const target =
        m.host === m.address
          ? 'the webhook URL points at'
          : `the webhook URL's host ${m.host} resolves to`;
      const why = m.allowable
        ? 'an internal address SVC_WEBHOOK_ALLOWED_HOSTS does not allow'
        : 'a link-local or cloud metadata address, refused even when SVC_WEBHOOK_ALLOWED_HOSTS lists it';
      return `${target} ${m.address}, ${why}`;
    },
  ),
  // Not in SPEC 7.3; see docs/decisions.md (webhook names looked up at registration).
  webhook_host_unknown: reason<{ host: string }>(
    'VALIDATION',
    (m) => `the webhook URL's host ${m.host} does not resolve to any address`,
  ),
  webhook_events_required: reason('VALIDATION', 'a webhook needs at least one event'),
  webhook_not_found: reason('NOT_FOUND', 'webhook not found'),
  first_out_of_range: reason<{ min: number; max: number }>(
    'VALIDATION',
    (m) => `graph: first must be between ${m.min} and ${m.max}`,
  ),
  locale_unknown: reason<{ supported: string[] }>(
    'VALIDATION',
    (m) => `locale must be one of ${m.supported.join(', ')}`,
  ),
  cursor_malformed: reason('VALIDATION', 'cursor was not issued by this field'),
  value_malformed: reason<{ type: string }>('VALIDATION', (m) => `value is not a valid ${m.type}`),
  token_name_required: reason('VALIDATION', 'a token needs a name'),
  token_not_found: reason('NOT_FOUND', 'token not found'),
  scope_malformed: reason<{ scope: string }>(
    'VALIDATION',
    (m) => `scope "${m.scope}" is not area:access`,
  ),
  scopes_required: reason('VALIDATION', 'a scoped token needs at least one scope'),
  area_unknown: reason<{ area: string }>('VALIDATION', (m) => `unknown scope area: ${m.area}`),
  lifetime_negative: reason('VALIDATION', 'a lifetime must be zero or more days'),
  lifetime_too_long: reason<{ maxDays: number }>(
    'VALIDATION',
    (m) => `a lifetime may be at most ${m.maxDays} days`,
  ),
  email_invalid: reason('VALIDATION', 'email address does not parse'),
  email_taken: reason('VALIDATION', 'that email address belongs to another account'),
  name_required: reason('VALIDATION', 'an account needs a name'),
  name_too_long: reason<{ max: number }>(
    'VALIDATION',
    (m) => `name may be at most ${m.max} characters`,
  ),
  password_too_short: reason<{ min: number }>(
    'VALIDATION',
    (m) => `password must be at least ${m.min} characters`,
  ),
  password_too_long: reason<{ max: number }>(
    'VALIDATION',
    (m) => `password may be at most ${m.max} characters`,
  ),
  user_not_found: reason('NOT_FOUND', 'user not found'),
  self_disable_refused: reason('VALIDATION', 'you cannot disable your own account'),
  self_role_refused: reason('VALIDATION', 'you cannot change your own role'),
  last_privileged_refused: reason('VALIDATION', 'the last admin cannot be unseated'),
  role_beyond_reach: reason('VALIDATION', 'that role is beyond your own'),
  role_unknown: reason<{ role: string }>('VALIDATION', (m) => `unknown role: ${m.role}`),
  // Not in SPEC 7.3; see docs/decisions.md ("Reasons the spec leaves unnamed").
  session_required: reason(
    'UNAUTHORIZED',
    'a browser session is required; tokens cannot manage tokens',
  ),
  link_invalid: reason('VALIDATION', 'that link is unknown, used or expired'),
  invitation_not_pending: reason('VALIDATION', 'that account has already accepted its invitation'),
  stream_required: reason(
    'VALIDATION',
    'subscriptions need Accept: text/event-stream with no JSON type',
  ),
  complexity_limit_exceeded: reason<{ complexity: number; limit: number }>(
    'COMPLEXITY_LIMIT_EXCEEDED',
    (m) => `operation has complexity ${m.complexity}, which exceeds the limit of ${m.limit}`,
  ),
  operation_deadline_exceeded: reason<{ timeoutMs: number }>(
    'COMPLEXITY_LIMIT_EXCEEDED',
    (m) => `operation ran past its deadline of ${m.timeoutMs} ms`,
  ),
  operation_invalid: reason('VALIDATION', 'operation is not valid against the schema'),
  offset_negative: reason('VALIDATION', 'graph: offset must be zero or more'),
  channel_unknown: reason<{ channel: string }>(
    'VALIDATION',
    (m) => `unknown channel: ${m.channel}`,
  ),
  body_too_large: reason<{ maxBytes: number }>(
    'VALIDATION',
    (m) => `request body exceeds the limit of ${m.maxBytes} bytes`,
  ),
  // Input limits (docs/limits.md); messages name the argument at fault.
  text_invalid: reason('VALIDATION', 'text holds a NUL character or an unpaired surrogate'),
  text_too_long: reason<{ max: number }>(
    'VALIDATION',
    (m) => `text may be at most ${m.max} characters`,
  ),
  list_too_long: reason<{ max: number }>(
    'VALIDATION',
    (m) => `a list may hold at most ${m.max} items`,
  ),
  query_too_deep: reason<{ max: number }>(
    'VALIDATION',
    (m) => `operation nests deeper than ${m.max} levels`,
  ),
  query_too_large: reason<{ max: number }>(
    'VALIDATION',
    (m) => `operation holds more than ${m.max} tokens`,
  ),
  // Not in SPEC 7.3; see docs/decisions.md ("PostgreSQL going away"). HTTP 503 with
  // Retry-After.
  database_unavailable: reason<{ retryAfter: number }>(
    'UNAVAILABLE',
    (m) => `the database is unavailable; try again in ${seconds(m.retryAfter)}`,
  ),
  identities_full: reason<{ max: number }>(
    'CONFLICT',
    (m) => `a contact holds at most ${m.max} identities`,
  ),
  // Not in SPEC 7.3: mergeContacts (docs/contacts.md).
  merge_target_in_sources: reason('VALIDATION', 'a contact cannot be merged into itself'),
} satisfies Record<string, ReasonSpec<never>>;

export type CoreReason = keyof typeof coreReasons;
type MetaOf<R extends CoreReason> = (typeof coreReasons)[R] extends ReasonSpec<infer M> ? M : never;

/** Reasons installed plugins declare (SPEC 7.4), registered when a plugin loads. */
const pluginReasons = new Map<string, ReasonSpec>();

export function registerReason(name: string, spec: ReasonSpec): void {
  const existing =
    name in coreReasons ? (coreReasons[name as CoreReason] as ReasonSpec) : pluginReasons.get(name);
  if (existing && existing.code !== spec.code) {
    throw new Error(`reason ${name} is already declared with code ${existing.code}`);
  }
  if (!existing) pluginReasons.set(name, spec);
}

export interface AppErrorOptions {
  /** Extra top-level extensions (`scope`, `capability`, `retryAfter`). */
  extensions?: Record<string, unknown>;
  /** HTTP status and headers for the transport; never sent to the client. */
  http?: { status: number; headers?: Record<string, string> };
  message?: string;
  /** Where in the operation: the failing field's response path and the nodes at fault. */
  path?: readonly (string | number)[];
  nodes?: readonly ASTNode[];
}

/**
 * The one error the service shows a client: SPEC 7.1's shape, with `code`, `reason` and
 * `meta`. Anything else thrown is masked as a bare INTERNAL.
 */
export class AppError extends GraphQLError {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly meta: Meta;

  constructor(reasonName: string, spec: ReasonSpec, given: Meta, options: AppErrorOptions = {}) {
    // Whatever a reason repeats of its input (a key, a name) reaches the caller bounded and
    // with its control characters escaped, whichever reason or plugin built the message.
    const meta = printableMeta(given) as Meta;
    const message = printable(
      options.message ??
        (typeof spec.message === 'function' ? spec.message(meta as never) : spec.message),
      MESSAGE_MAX,
    );
    super(message, {
      ...(options.path ? { path: options.path } : {}),
      ...(options.nodes ? { nodes: options.nodes } : {}),
      extensions: {
        code: spec.code,
        reason: reasonName,
        meta,
        ...options.extensions,
        ...(options.http ? { http: options.http } : {}),
      },
    });
    this.name = 'AppError';
    this.code = spec.code;
    this.reason = reasonName;
    this.meta = meta;
  }
}

/** A refusal from the core catalogue: `refuse('identity_taken', { ownerContactId })`. */
export function refuse<R extends CoreReason>(
  name: R,
  ...[meta, options]: MetaOf<R> extends Record<string, never>
    ? [meta?: Record<string, never>, options?: AppErrorOptions]
    : [meta: MetaOf<R>, options?: AppErrorOptions]
): AppError {
  return new AppError(name, coreReasons[name] as unknown as ReasonSpec, meta ?? {}, options);
}

/** A refusal by a reason a plugin declared. */
export function refusePlugin(name: string, meta: Meta = {}, options?: AppErrorOptions): AppError {
  const spec =
    pluginReasons.get(name) ?? (coreReasons as unknown as Record<string, ReasonSpec>)[name];
  if (!spec) throw new Error(`reason ${name} is not declared`);
  return new AppError(name, spec, meta, options);
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

/** The bare INTERNAL answer: no reason, nothing from the failure. */
export function internalError(correlationId: string): GraphQLError {
  return new GraphQLError('internal error', {
    extensions: { code: 'INTERNAL', correlationId },
  });
}

/** Seconds a caller is told to wait (Retry-After) while the database is unavailable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

/** The answer while the database is out of reach: UNAVAILABLE, HTTP 503 with Retry-After. */
export function databaseUnavailable(
  options: Pick<AppErrorOptions, 'path' | 'nodes'> = {},
): AppError {
  const retryAfter = UNAVAILABLE_RETRY_AFTER_SECONDS;
  return refuse(
    'database_unavailable',
    { retryAfter },
    { ...options, http: { status: 503, headers: { 'Retry-After': String(retryAfter) } } },
  );
}
