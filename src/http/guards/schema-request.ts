import {
  getOperationAST,
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type OperationDefinitionNode,
} from 'graphql';
import { operationToRun, requestedOperation } from './graph-request.js';

/** Root fields that read the schema, not the service's data. */
const SCHEMA_FIELDS: ReadonlySet<string> = new Set(['__schema', '__type', '__typename']);

/**
 * Whether the operation that would run reads only the schema: a query whose root fields
 * are all `__schema`, `__type` or `__typename` (no fragments at the root). What it selects
 * below them can only be the schema's own types.
 */
export function readsOnlySchema(document: DocumentNode, operationName?: string | null): boolean {
  const operation = getOperationAST(document, operationName);
  return operation ? onlySchemaFields(operation) : false;
}

function onlySchemaFields(operation: OperationDefinitionNode): boolean {
  if (operation.operation !== OperationTypeNode.QUERY) return false;
  return operation.selectionSet.selections.every(
    (selection) => selection.kind === Kind.FIELD && SCHEMA_FIELDS.has(selection.name.value),
  );
}

/**
 * Whether a request asks only for the schema (GraphiQL's introspection query), judged
 * for an anonymous caller with SVC_DEV_GRAPHIQL, whose request the HTTP layer has already
 * held to SVC_GRAPH_ANONYMOUS_MAX_BYTES. Text naming neither `__schema` nor `__type` is
 * never parsed; one that does not parse (or nests past the stack) is not such a request,
 * and meets the anonymous caps as any other.
 */
export function asksOnlyForSchema(url: URL, body: Buffer | null): boolean {
  const requested = requestedOperation(url, body);
  if (!requested) return false;
  const { query } = requested;
  if (!query.includes('__schema') && !query.includes('__type')) return false;
  const operation = operationToRun(requested);
  return operation !== null && onlySchemaFields(operation);
}
