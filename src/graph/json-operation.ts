/**
 * The common request, read the way Yoga reads it: one operation POSTed as JSON, answered
 * as JSON. The graph route serves it through Yoga's operation pipeline without Yoga's
 * request parsing and Response objects (src/graph/server.ts `answerJson`); whatever is
 * not exactly this case takes Yoga's whole path, which answers it as it always did.
 */

/** One operation's parameters, as Yoga's parameter checks accept them. */
export interface JsonOperation {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
}

/** The media types Yoga answers a single result in. */
export type JsonMediaType = 'application/json' | 'application/graphql-response+json';

const PARAMETERS = new Set(['query', 'variables', 'operationName', 'extensions']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Yoga's JSON parser takes a first Content-Type of `application/json` (or the +json one). */
function isJsonContentType(contentType: string | undefined): boolean {
  const first = contentType?.split(',')[0];
  return ['application/json', 'application/graphql+json'].some(
    (type) => first === type || !!first?.startsWith(`${type};`),
  );
}

/**
 * The operation of a JSON body that passes every check Yoga makes of its parameters; null
 * for anything else (a batch, a malformed body, an unknown or mistyped parameter), which
 * Yoga then refuses with its own messages.
 */
export function jsonOperation(
  contentType: string | undefined,
  body: Buffer | null,
): JsonOperation | null {
  if (!body || !isJsonContentType(contentType)) return null;
  let params: unknown;
  try {
    params = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!isRecord(params) || typeof params.query !== 'string') return null;
  // `for…in` over a parsed object walks its own keys, without an array of entries.
  for (const name in params) {
    const value = params[name];
    if (value === null || value === undefined || name === 'query') continue;
    if (!PARAMETERS.has(name)) return null;
    if (name === 'operationName' ? typeof value !== 'string' : !isRecord(value)) return null;
  }
  return params as unknown as JsonOperation;
}

const JSON_TYPES: readonly JsonMediaType[] = [
  'application/graphql-response+json',
  'application/json',
];

/** Yoga's test of an accepted type (`*` wildcards) against a type it can answer. */
function accepts(accepted: string, type: string): boolean {
  const [kind, subtype] = accepted.split('/');
  const [typeKind, typeSubtype] = type.split('/');
  return (kind === '*' || kind === typeKind) && (subtype === '*' || subtype === typeSubtype);
}

/**
 * The JSON type Yoga would answer a single result in, given the request's Accept: the
 * first accepted type (utf-8 only) that either JSON type matches, and of the JSON types
 * it matches, the plain one. Null when Accept takes no JSON type (Yoga answers 406, or a
 * multipart answer).
 */
export function jsonMediaType(accept: string | undefined): JsonMediaType | null {
  const text = accept || '*/*';
  let type = answered.get(text);
  if (type === undefined) {
    if (answered.size >= ANSWERED_MAX) answered.clear();
    answered.set(text, (type = mediaTypeFor(text)));
  }
  return type;
}

/** Accept headers seen lately: clients send few distinct ones, on every request. */
const answered = new Map<string, JsonMediaType | null>();
const ANSWERED_MAX = 256;

function mediaTypeFor(accept: string): JsonMediaType | null {
  const accepted = accept.replace(/\s/g, '').toLowerCase().split(',');
  for (const entry of accepted) {
    const [type = '', ...params] = entry.split(';');
    const charset = params.find((param) => param.includes('charset=')) ?? 'charset=utf-8';
    if (charset !== 'charset=utf-8') continue;
    const matching = JSON_TYPES.filter((json) => accepts(type, json));
    if (matching.length > 0) return matching.at(-1) as JsonMediaType;
  }
  return null;
}
