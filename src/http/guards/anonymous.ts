import { Lexer, Source, TokenKind, type Token } from 'graphql';
import type { Config } from '../../config.js';
import { refuse, type AppError } from '../../errors.js';

/** SPEC 8.2 "Graph limits and anonymous callers". */
export type AnonymousCaps = Config['graph']['anonymous'];

export interface AnonymousBody {
  /** The request's `Content-Type` header, if any. */
  contentType: string | undefined;
  bodyBytes: number;
  caps: Pick<AnonymousCaps, 'maxBytes'>;
}

function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

function isJson(type: string): boolean {
  return type === 'application/json' || /^application\/[^/]+\+json$/.test(type);
}

/**
 * Whether a caller not signed in sent a body it may not send: any multipart body (uploads
 * are for signed-in users), a non-empty body that is not JSON (SPEC: "JSON only"; a form
 * or `application/graphql` body would also slip past the query checks, which read the JSON
 * `query`), or one over `maxBytes`. Exactly `maxBytes` passes. Answers the UNAUTHENTICATED
 * refusal to send, or null.
 */
export function anonymousBodyRefusal({
  contentType,
  bodyBytes,
  caps,
}: AnonymousBody): AppError | null {
  const type = mediaType(contentType ?? '');
  if (type.startsWith('multipart/')) return refuse('authentication_required');
  if (bodyBytes > 0 && !isJson(type)) return refuse('authentication_required');
  if (bodyBytes > caps.maxBytes) return refuse('authentication_required');
  return null;
}

/**
 * The query's tokens as the spec counts them (name, value, mark, comment): every lexical
 * token but the start and end markers. Commas and white space are ignored tokens in GraphQL
 * and are not counted. `lexer.advance()` skips comments but still links them into the token
 * chain, so the chain is walked. A lexing error ends the count at the last token read.
 */
export function countQueryTokens(query: string): number {
  const lexer = new Lexer(new Source(query));
  const start: Token = lexer.token;
  try {
    while (lexer.advance().kind !== TokenKind.EOF);
  } catch {
    // The graph's parser will stop at the same place and answer a syntax error.
  }
  let count = 0;
  for (let token = start.next; token && token.kind !== TokenKind.EOF; token = token.next) {
    count += 1;
  }
  return count;
}

/**
 * Whether an anonymous query is over `queryMaxBytes` (UTF-8 bytes) or `maxTokens`. Exactly
 * at a cap passes. A query that does not lex is not refused here: the tokens before the
 * error still count against `maxTokens`, and if they fit, the graph answers its usual syntax
 * error, which reads no further than the lexer did. The byte cap runs first, so lexing never
 * sees more than `queryMaxBytes`.
 */
export function anonymousQueryRefusal(
  query: string,
  caps: Pick<AnonymousCaps, 'queryMaxBytes' | 'maxTokens'>,
): AppError | null {
  if (Buffer.byteLength(query, 'utf8') > caps.queryMaxBytes) {
    return refuse('authentication_required');
  }
  if (countQueryTokens(query) > caps.maxTokens) return refuse('authentication_required');
  return null;
}
