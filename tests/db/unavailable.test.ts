import { describe, expect, test } from '@jest/globals';
import { GraphQLError } from 'graphql';
import { isDatabaseUnavailable, reconnectDelaySeconds } from '../../src/db/client.js';

const coded = (code: string) => Object.assign(new Error(code), { code });

describe('isDatabaseUnavailable', () => {
  test.each(['CONNECTION_CLOSED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', '57P01', '57P03', '08006'])(
    '%s is the database being unavailable',
    (code) => expect(isDatabaseUnavailable(coded(code))).toBe(true),
  );

  test('sees through Drizzle causes, GraphQL errors and aggregate refusals', () => {
    const drizzle = Object.assign(new Error('Failed query'), { cause: coded('CONNECTION_CLOSED') });
    const graph = new GraphQLError('x', { originalError: drizzle });
    const aggregate = new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]);
    expect([drizzle, graph, aggregate].map(isDatabaseUnavailable)).toEqual([true, true, true]);
  });

  test.each(['23505', '57014', '40001', 'CONNECTION_ENDED'])(
    '%s is a failure of the statement or a shutdown, not an outage',
    (code) => expect(isDatabaseUnavailable(coded(code))).toBe(false),
  );

  test('a plain error, or none, is not', () => {
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
  });
});

test('reconnect delays stay within a second however often connecting failed', () => {
  for (const retries of [0, 1, 3, 5, 10, 100]) {
    const delay = reconnectDelaySeconds(retries);
    expect(delay).toBeGreaterThan(0);
    expect(delay).toBeLessThanOrEqual(1);
  }
});
