import { describe, expect, test } from '@jest/globals';
import { graphGetRefused } from '../../../src/http/guards/graph-get.js';

describe('graphGetRefused', () => {
  test.each(['GET', 'HEAD'])('refuses a %s query while the interactive page is off', (method) => {
    expect(graphGetRefused(method, 'application/json', false)).toBe(true);
  });

  test.each([undefined, '*/*', 'text/html', 'text/event-stream, application/json'])(
    'refuses a GET with Accept %j, which asks for no stream',
    (accept) => {
      expect(graphGetRefused('GET', accept, false)).toBe(true);
    },
  );

  test('lets a GET asking for an event stream run', () => {
    expect(graphGetRefused('GET', 'text/event-stream', false)).toBe(false);
  });

  test('lets every GET run with SVC_DEV_GRAPHIQL', () => {
    expect(graphGetRefused('GET', 'application/json', true)).toBe(false);
    expect(graphGetRefused('GET', undefined, true)).toBe(false);
  });

  test.each(['POST', 'OPTIONS', 'get'])('leaves a %s to the other checks', (method) => {
    expect(graphGetRefused(method, 'application/json', false)).toBe(false);
  });
});
