import { getOperationAST, parse, type OperationDefinitionNode } from 'graphql';
import { TOKENS_MAX } from '../../limits.js';

/** What a graph request asks to run, as the HTTP guards read it before Yoga does. */
export interface RequestedOperation {
  query: string;
  operationName: string | null;
}

/**
 * The query text and operation name of a GET (`?query=`) or of a JSON POST body. Null
 * when the body is not one such request: not JSON, a batch, a query that is not text or
 * an operation name that is not one.
 */
export function requestedOperation(url: URL, body: Buffer | null): RequestedOperation | null {
  if (!body || body.length === 0) {
    return {
      query: url.searchParams.get('query') ?? '',
      operationName: url.searchParams.get('operationName'),
    };
  }
  let request: unknown;
  try {
    request = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return null;
  const { query, operationName = null } = request as { query?: unknown; operationName?: unknown };
  if (typeof query !== 'string') return null;
  if (operationName !== null && typeof operationName !== 'string') return null;
  return { query, operationName };
}

/**
 * The operation the request would run, parsed within the token cap (no locations kept);
 * null when the text does not parse or does not pick exactly one operation.
 */
export function operationToRun(requested: RequestedOperation): OperationDefinitionNode | null {
  try {
    const document = parse(requested.query, { noLocation: true, maxTokens: TOKENS_MAX });
    return getOperationAST(document, requested.operationName) ?? null;
  } catch {
    return null;
  }
}
