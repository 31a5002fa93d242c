import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { TOKENS_MAX } from '../../limits.js';

/**
 * Whether a graph request body asks for a write, for the cross-origin check (SPEC 5:
 * "Reads are never refused"). A mutation is a write. A query or a subscription is a read: a
 * subscription changes nothing, and is judged as the same operation sent by GET would be
 * (docs/decisions.md). Anything this cannot read as one operation — a body that is not
 * JSON, a document that does not parse, an operation it cannot pick — is judged a write,
 * so doubt never lets a write through.
 */
export function asksForWrite(body: Buffer | null): boolean {
  if (!body || body.length === 0) return true;
  let request: unknown;
  try {
    request = JSON.parse(body.toString('utf8'));
  } catch {
    return true;
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return true;
  const { query, operationName } = request as { query?: unknown; operationName?: unknown };
  if (typeof query !== 'string') return true;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
    return true;
  let operations: OperationDefinitionNode[];
  try {
    operations = parse(query, { noLocation: true, maxTokens: TOKENS_MAX }).definitions.filter(
      (definition): definition is OperationDefinitionNode =>
        definition.kind === Kind.OPERATION_DEFINITION,
    );
  } catch {
    return true;
  }
  const chosen =
    typeof operationName === 'string'
      ? operations.filter((operation) => operation.name?.value === operationName)
      : operations;
  return chosen.length !== 1 || chosen[0]?.operation === 'mutation';
}
