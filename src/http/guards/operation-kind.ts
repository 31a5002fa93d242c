import { requestedOperation, operationToRun } from './graph-request.js';

const NO_URL = new URL('http://localhost/');

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
  const requested = requestedOperation(NO_URL, body);
  const operation = requested && operationToRun(requested);
  return !operation || operation.operation === 'mutation';
}
