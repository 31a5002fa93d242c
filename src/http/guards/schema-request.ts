import { getOperationAST, Kind, OperationTypeNode, parse, type DocumentNode } from 'graphql';

/** Root fields that read the schema, not the service's data. */
const SCHEMA_FIELDS: ReadonlySet<string> = new Set(['__schema', '__type', '__typename']);

/**
 * Whether the operation that would run reads only the schema: a query whose root fields
 * are all `__schema`, `__type` or `__typename` (no fragments at the root). What it selects
 * below them can only be the schema's own types.
 */
export function readsOnlySchema(document: DocumentNode, operationName?: string | null): boolean {
  const operation = getOperationAST(document, operationName);
  if (!operation || operation.operation !== OperationTypeNode.QUERY) return false;
  return operation.selectionSet.selections.every(
    (selection) => selection.kind === Kind.FIELD && SCHEMA_FIELDS.has(selection.name.value),
  );
}

/** The query text and operation name of a GET (`?query=`) or a JSON POST. */
function operationOf(url: URL, body: Buffer | null): { query: string; operationName?: unknown } {
  if (!body || body.length === 0) {
    return {
      query: url.searchParams.get('query') ?? '',
      operationName: url.searchParams.get('operationName'),
    };
  }
  const parsed = JSON.parse(body.toString('utf8')) as { query?: unknown; operationName?: unknown };
  return {
    query: typeof parsed?.query === 'string' ? parsed.query : '',
    operationName: parsed?.operationName,
  };
}

/**
 * Whether a request asks only for the schema (GraphiQL's introspection query), judged
 * for an anonymous caller with SVC_DEV_GRAPHIQL, whose request the HTTP layer has already
 * held to SVC_GRAPH_ANONYMOUS_MAX_BYTES. Text naming neither `__schema` nor `__type` is
 * never parsed; one that does not parse (or nests past the stack) is not such a request,
 * and meets the anonymous caps as any other.
 */
export function asksOnlyForSchema(url: URL, body: Buffer | null): boolean {
  try {
    const { query, operationName } = operationOf(url, body);
    if (!query.includes('__schema') && !query.includes('__type')) return false;
    const name = typeof operationName === 'string' ? operationName : null;
    return readsOnlySchema(parse(query, { noLocation: true }), name);
  } catch {
    return false;
  }
}
