import type { GraphQLFormattedError } from 'graphql';
import { refuse } from '../../errors.js';
import type { AnonymousCaps } from './anonymous.js';

/** Whether an answer to an anonymous caller is over `answerMaxBytes`; exactly at it passes. */
export function answerTooLarge(
  byteLength: number,
  caps: Pick<AnonymousCaps, 'answerMaxBytes'>,
): boolean {
  return byteLength > caps.answerMaxBytes;
}

/** What replaces an over-size anonymous answer (SPEC 8.2): UNAUTHENTICATED, graph-shaped. */
export function answerTooLargeBody(): { data: null; errors: GraphQLFormattedError[] } {
  return { data: null, errors: [refuse('authentication_required').toJSON()] };
}
