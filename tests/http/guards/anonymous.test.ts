import { describe, expect, test } from '@jest/globals';
import { AppError } from '../../../src/errors.js';
import {
  anonymousBodyRefusal,
  anonymousQueryRefusal,
  countQueryTokens,
} from '../../../src/http/guards/anonymous.js';
import { answerTooLarge, answerTooLargeBody } from '../../../src/http/guards/answer-cap.js';

const CAPS = {
  maxBytes: 16384,
  maxTokens: 64,
  queryMaxBytes: 1024,
  answerMaxBytes: 16384,
  perIp: 5,
  ceiling: 20,
};

function expectUnauthenticated(refusal: AppError | null): void {
  expect(refusal).toBeInstanceOf(AppError);
  expect(refusal?.message).toBe('authentication required');
  expect(refusal?.extensions).toMatchObject({
    code: 'UNAUTHENTICATED',
    reason: 'authentication_required',
  });
}

describe('anonymousBodyRefusal', () => {
  test.each<[string, string | undefined, number, boolean]>([
    ['passes a small JSON body', 'application/json', 100, true],
    ['passes a JSON body with a charset', 'application/json; charset=utf-8', 100, true],
    ['passes a +json media type', 'application/graphql+json', 100, true],
    ['passes a JSON body exactly at the cap', 'application/json', CAPS.maxBytes, true],
    ['refuses a JSON body one byte over the cap', 'application/json', CAPS.maxBytes + 1, false],
    ['refuses multipart form data', 'multipart/form-data; boundary=x', 100, false],
    ['refuses multipart even when empty', 'multipart/form-data; boundary=x', 0, false],
    ['refuses multipart written in capitals', 'Multipart/Form-Data; boundary=x', 100, false],
    ['refuses other multipart types', 'multipart/mixed; boundary=x', 100, false],
    ['refuses a form body', 'application/x-www-form-urlencoded', 100, false],
    ['refuses an application/graphql body', 'application/graphql', 100, false],
    ['refuses a body with no content type', undefined, 100, false],
    ['passes an empty body with no content type', undefined, 0, true],
  ])('%s', (_name, contentType, bodyBytes, passes) => {
    const refusal = anonymousBodyRefusal({ contentType, bodyBytes, caps: CAPS });
    if (passes) expect(refusal).toBeNull();
    else expectUnauthenticated(refusal);
  });
});

describe('countQueryTokens', () => {
  test.each([
    ['', 0],
    ['{ me { id } }', 6],
    ['{ a, b }', 4],
    ['{ a }\n# a comment\n', 4],
    ['# one\n# two\n{ a } # three', 6],
    ['{ a(s: "a long string value with many words") }', 8],
    ['{ a(s: """block\nstring""") }', 8],
    ['{ a(n: 12, f: 1.5e3, b: true, z: null, e: RED, l: [1, 2]) }', 26],
    ['query Q($v: Int! = 1) @d { ...F }', 17],
    ['fragment F on T { a }', 7],
  ])('counts %j as %i tokens', (query, count) => {
    expect(countQueryTokens(query)).toBe(count);
  });

  test('counts the tokens read before a lexing error', () => {
    expect(countQueryTokens('{ a "unterminated')).toBe(2);
    expect(countQueryTokens('{ a ~ b }')).toBe(2);
  });
});

describe('anonymousQueryRefusal', () => {
  const ascii = (bytes: number): string => `#${'x'.repeat(bytes - 1)}`;

  test.each<[string, string, boolean]>([
    [
      'passes a login mutation',
      'mutation($e: String!, $p: String!) { login(email: $e, password: $p) { id } }',
      true,
    ],
    ['passes a query exactly at the byte cap', ascii(CAPS.queryMaxBytes), true],
    ['refuses a query one byte over the byte cap', ascii(CAPS.queryMaxBytes + 1), false],
    // "é" is two bytes in UTF-8: 512 of them fill the cap, a comment holds them in one token.
    ['passes multi-byte characters exactly at the byte cap', `#${'é'.repeat(511)}x`, true],
    [
      'refuses multi-byte characters over the byte cap though under it in characters',
      `#${'é'.repeat(512)}`,
      false,
    ],
    ['refuses four-byte characters over the byte cap', `#${'😀'.repeat(256)}`, false],
    ['passes exactly the token cap', `{ ${'a '.repeat(62)}}`, true],
    ['refuses one token over the cap', `{ ${'a '.repeat(63)}}`, false],
    ['passes comments up to the token cap', `{ a }${'\n#c'.repeat(61)}`, true],
    ['counts comments as tokens', `{ a }${'\n#c'.repeat(62)}`, false],
    ['passes string values up to the token cap', `{ a(s: ${'"x y z" '.repeat(57)}) }`, true],
    ['counts string values as one token each', `{ a(s: ${'"x y z" '.repeat(58)}) }`, false],
    ['does not count commas', `{ ${'a,,,, '.repeat(62)}}`, true],
    ['passes an unlexable query under the cap to the graph', '{ a "unterminated', true],
    [
      'refuses an unlexable query whose lexed tokens are over the cap',
      `{ ${'a '.repeat(64)} "open`,
      false,
    ],
  ])('%s', (_name, query, passes) => {
    const refusal = anonymousQueryRefusal(query, CAPS);
    if (passes) expect(refusal).toBeNull();
    else expectUnauthenticated(refusal);
  });
});

describe('answerTooLarge', () => {
  test.each([
    [0, false],
    [CAPS.answerMaxBytes, false],
    [CAPS.answerMaxBytes + 1, true],
  ])('judges %i bytes over the cap: %s', (bytes, expected) => {
    expect(answerTooLarge(bytes, CAPS)).toBe(expected);
  });

  test('replaces the answer with a graph-shaped UNAUTHENTICATED error', () => {
    expect(answerTooLargeBody()).toEqual({
      data: null,
      errors: [
        {
          message: 'authentication required',
          extensions: { code: 'UNAUTHENTICATED', reason: 'authentication_required', meta: {} },
        },
      ],
    });
  });
});
