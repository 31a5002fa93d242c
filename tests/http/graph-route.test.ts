import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { fixturePluginsDir } from '../support/env.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SVC_GRAPH_BODY_MAX_BYTES: '2048',
      SVC_GRAPH_UPLOAD_MAX_BYTES: '4096',
      SVC_GRAPH_OPERATION_TIMEOUT: '300ms',
      SVC_GRAPH_RETRY_AFTER: '3s',
      SVC_LIST_PAGE_SIZES: '25,50,75',
      SVC_LIST_PAGE_SIZE: '50',
      SVC_GRAPH_PAGE_CAP: '300',
      SVC_GRAPH_PAGE_SIZE: '7',
      SVC_TOAST_DURATION: '1500ms',
      SVC_FORMAT_LOCALE: 'de-DE',
    },
    plugins: { dir: fixturePluginsDir },
  });
});

afterAll(() => svc.stop());

describe('the graph route', () => {
  test('version answers the package version', async () => {
    const { status, body } = await svc.graph('{ version }');
    expect(status).toBe(200);
    expect(body).toEqual({ data: { version: '0.9.0' } });
  });

  test('adminSettings answers the configured display settings', async () => {
    const { body } = await svc.graph(
      '{ adminSettings { toastMilliseconds listPageSizes listPageSize contactPageCap formatLocale } }',
    );
    expect(body.data?.adminSettings).toEqual({
      toastMilliseconds: 1500,
      listPageSizes: [25, 50, 75],
      listPageSize: 50,
      contactPageCap: 300,
      formatLocale: 'de-DE',
    });
  });

  test('graphql-sse single-connection steps without a credential answer 401 with the graph’s error body', async () => {
    const authenticationRequired = {
      data: null,
      errors: [
        {
          message: 'authentication required',
          extensions: { code: 'UNAUTHENTICATED', reason: 'authentication_required', meta: {} },
        },
      ],
    };
    const steps: RequestInit[] = [
      { method: 'PUT' },
      { method: 'DELETE' },
      { headers: { accept: 'text/event-stream', 'x-graphql-event-stream-token': 'any' } },
    ];
    for (const step of steps) {
      const response = await svc.request(`/api/graphql`, step);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.json()).toEqual(authenticationRequired);
    }
    // Signed in, the reservation is made.
    const reserved = await svc.request(`/api/graphql`, {
      method: 'PUT',
      headers: svc.adminHeaders,
    });
    expect(reserved.status).toBe(201);
  });

  test('introspection is on', async () => {
    const { body } = await svc.graph('{ __schema { queryType { name } } }');
    expect(body.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
  });

  test('a JSON body over SVC_GRAPH_BODY_MAX_BYTES is refused with 413 before the graph reads it', async () => {
    const query = `{ version } # ${'x'.repeat(2100)}`;
    const { status, body } = await svc.graph(query);
    expect(status).toBe(413);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions).toEqual({
      code: 'VALIDATION',
      reason: 'body_too_large',
      meta: { maxBytes: 2048 },
    });
  });

  test('a multipart body is held to SVC_GRAPH_UPLOAD_MAX_BYTES instead', async () => {
    const form = (size: number) => {
      const data = new FormData();
      data.set('operations', JSON.stringify({ query: '{ version }', variables: {} }));
      data.set('map', '{}');
      data.set('padding', 'x'.repeat(size));
      return data;
    };
    const small = await svc.request(`/api/graphql`, {
      method: 'POST',
      body: form(2500),
      headers: svc.adminHeaders,
    });
    expect(small.status).toBe(200);
    expect(await small.json()).toEqual({ data: { version: '0.9.0' } });
    const large = await svc.request(`/api/graphql`, {
      method: 'POST',
      body: form(5000),
      headers: svc.adminHeaders,
    });
    expect(large.status).toBe(413);
    expect(
      ((await large.json()) as { errors: { extensions: unknown }[] }).errors[0]?.extensions,
    ).toEqual({
      code: 'VALIDATION',
      reason: 'body_too_large',
      meta: { maxBytes: 4096 },
    });
  });
});

describe('scalars', () => {
  const echo =
    'query ($id: UUID!, $day: Date!, $at: DateTime!) { probeEcho(id: $id, day: $day, at: $at) { id day at } }';

  test('UUID, Date and DateTime parse and answer in their formats, DateTime in UTC', async () => {
    const { body } = await svc.graph(echo, {
      id: '0B5C8C7E-1D1A-4E4B-9A55-3D6F0F7A9B10',
      day: '2024-02-29',
      at: '2024-03-01T10:15:00+02:00',
    });
    expect(body.data?.probeEcho).toEqual({
      id: '0b5c8c7e-1d1a-4e4b-9a55-3d6f0f7a9b10',
      day: '2024-02-29',
      at: '2024-03-01T08:15:00.000Z',
    });
  });

  test.each([
    ['UUID', { id: 'not-a-uuid', day: '2024-01-01', at: '2024-01-01T00:00:00Z' }],
    [
      'Date',
      { id: '0b5c8c7e-1d1a-4e4b-9a55-3d6f0f7a9b10', day: '2023-02-29', at: '2024-01-01T00:00:00Z' },
    ],
    [
      'DateTime',
      { id: '0b5c8c7e-1d1a-4e4b-9a55-3d6f0f7a9b10', day: '2024-01-01', at: 'yesterday' },
    ],
  ])(
    'a %s variable that does not parse is refused with value_malformed',
    async (type, variables) => {
      const { status, body } = await svc.graph(echo, variables);
      expect(status).toBe(200);
      expect(body.data ?? null).toBeNull();
      expect(body.errors?.[0]?.extensions).toMatchObject({
        code: 'VALIDATION',
        reason: 'value_malformed',
        meta: { type },
      });
    },
  );

  test('a malformed literal in the query is refused with value_malformed too', async () => {
    const { body } = await svc.graph(
      '{ probeEcho(id: "nope", day: "2024-01-01", at: "2024-01-01T00:00:00Z") { id } }',
    );
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION',
      reason: 'value_malformed',
    });
  });

  test('a malformed value answers one shape, written inline or passed as a variable: data null, the field’s path, the value’s place', async () => {
    const inline = await svc.graph('{ contact(id: "not-a-uuid") { id } }');
    expect(inline.body).toEqual({
      data: null,
      errors: [
        {
          message: 'Argument "id" got invalid value "not-a-uuid"; value is not a valid UUID',
          locations: [{ line: 1, column: 15 }],
          path: ['contact'],
          extensions: { code: 'VALIDATION', reason: 'value_malformed', meta: { type: 'UUID' } },
        },
      ],
    });
    const variable = await svc.graph('query ($id: UUID!) { contact(id: $id) { id } }', {
      id: 'not-a-uuid',
    });
    expect(variable.body).toEqual({
      data: null,
      errors: [
        {
          message: 'Variable "$id" got invalid value "not-a-uuid"; value is not a valid UUID',
          locations: [{ line: 1, column: 8 }],
          path: ['contact'],
          extensions: { code: 'VALIDATION', reason: 'value_malformed', meta: { type: 'UUID' } },
        },
      ],
    });
  });

  test('a malformed literal sent again answers as it did the first time (its validation is kept)', async () => {
    const query = '{ contact(id: "not-a-uuid-again") { id } }';
    const first = await svc.graph(query);
    const again = await svc.graph(query);
    expect(first.body.errors?.[0]?.extensions).toEqual({
      code: 'VALIDATION',
      reason: 'value_malformed',
      meta: { type: 'UUID' },
    });
    expect(again.body).toEqual(first.body);
  });

  test('a malformed field of an input object names its place inline as in a variable, under an alias', async () => {
    const inline = await svc.graph(
      'mutation { made: createTask(input: {title: "x", dueOn: "tomorrow"}) { task { id } } }',
    );
    expect(inline.body.data).toBeNull();
    expect(inline.body.errors).toEqual([
      expect.objectContaining({
        message:
          'Argument "input" got invalid value "tomorrow" at "input.dueOn"; value is not a valid Date',
        path: ['made'],
        locations: [{ line: 1, column: 56 }],
        extensions: { code: 'VALIDATION', reason: 'value_malformed', meta: { type: 'Date' } },
      }),
    ]);
    const variable = await svc.graph(
      'mutation ($i: CreateTaskInput!) { made: createTask(input: $i) { task { id } } }',
      { i: { title: 'x', dueOn: 'tomorrow' } },
    );
    expect(variable.body.data).toBeNull();
    expect(variable.body.errors).toEqual([
      expect.objectContaining({
        message: expect.stringContaining('at "i.dueOn"; value is not a valid Date'),
        path: ['made'],
        locations: [{ line: 1, column: 11 }],
        extensions: { code: 'VALIDATION', reason: 'value_malformed', meta: { type: 'Date' } },
      }),
    ]);
  });

  test('every error of the request itself answers data null and, inside a field, that field’s path', async () => {
    const unknown = await svc.graph('{ me { nickname } }');
    expect(unknown.body).toEqual({
      data: null,
      errors: [
        expect.objectContaining({
          path: ['me', 'nickname'],
          extensions: { code: 'VALIDATION', reason: 'operation_invalid', meta: {} },
        }),
      ],
    });
    // A document that does not parse has no field to name, but still its place.
    const syntax = await svc.graph('{ me { ');
    expect(syntax.body).toEqual({
      data: null,
      errors: [
        {
          message: 'Syntax Error: Expected Name, found <EOF>.',
          locations: [{ line: 1, column: 8 }],
          extensions: { code: 'VALIDATION', reason: 'operation_invalid', meta: {} },
        },
      ],
    });
  });
});

describe('errors', () => {
  test('an unexpected exception answers a bare INTERNAL and logs it with the same correlation id', async () => {
    const { body } = await svc.graph('{ probeBroken }');
    const error = body.errors?.[0];
    expect(body.data).toBeNull();
    expect(error?.message).toBe('internal error');
    expect(error?.path).toEqual(['probeBroken']);
    expect(error?.extensions.code).toBe('INTERNAL');
    expect(error?.extensions.reason).toBeUndefined();
    expect(JSON.stringify(body)).not.toContain('hunter2');
    const logged = svc.lines.find((line) => line.correlationId === error?.extensions.correlationId);
    expect(logged?.level).toBe('error');
    expect(JSON.stringify(logged)).toContain('hunter2');
  });

  test('a plugin refusal answers its code, reason and meta with data null', async () => {
    const { status, body } = await svc.graph('{ probeRefuse }');
    expect(status).toBe(200);
    expect(body).toEqual({
      data: null,
      errors: [
        {
          message: 'probe refused: asked to',
          locations: [{ line: 1, column: 3 }],
          path: ['probeRefuse'],
          extensions: { code: 'CONFLICT', reason: 'probe_refused', meta: { why: 'asked to' } },
        },
      ],
    });
  });

  test('an operation that does not validate is refused as VALIDATION, never INTERNAL', async () => {
    const { body } = await svc.graph('{ noSuchField }');
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION',
      reason: 'operation_invalid',
    });
    const syntax = await svc.graph('{ version');
    expect(syntax.body.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION',
      reason: 'operation_invalid',
    });
  });
});

describe('page sizes', () => {
  test('a list left without first serves SVC_GRAPH_PAGE_SIZE rows', async () => {
    const { body } = await svc.graph('{ probeNumbers }');
    expect(body.data?.probeNumbers).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  test.each([0, -1, 301])(
    'first: %i is refused with first_out_of_range naming the cap',
    async (first) => {
      const { body } = await svc.graph('query ($first: Int) { probeNumbers(first: $first) }', {
        first,
      });
      expect(body.errors?.[0]).toMatchObject({
        message: 'graph: first must be between 1 and 300',
        extensions: {
          code: 'VALIDATION',
          reason: 'first_out_of_range',
          meta: { min: 1, max: 300 },
        },
      });
    },
  );

  test('first up to the configured cap is served', async () => {
    const { body } = await svc.graph('{ probeNumbers(first: 300) }');
    expect((body.data?.probeNumbers as number[]).length).toBe(300);
  });
});

describe('limits', () => {
  test('an operation past SVC_GRAPH_OPERATION_TIMEOUT is ended with 429 and Retry-After', async () => {
    const { status, headers, body } = await svc.graph('{ probeSlow }');
    expect(status).toBe(429);
    expect(headers.get('retry-after')).toBe('3');
    expect(body.errors?.[0]).toMatchObject({
      message: 'operation ran past its deadline of 300 ms',
      extensions: { code: 'COMPLEXITY_LIMIT_EXCEEDED', reason: 'operation_deadline_exceeded' },
    });
  });

  test('a query over the complexity limit is refused with the 8.1 message', async () => {
    const { status, body } = await svc.graph(
      '{ a: probeNumbers(first: 300) b: probeNumbers(first: 300) c: probeNumbers(first: 300) d: probeNumbers(first: 300) e: probeNumbers(first: 300) f: probeNumbers(first: 300) g: probeNumbers(first: 300) h: probeNumbers(first: 300) i: probeNumbers(first: 300) }',
    );
    expect(status).toBe(429);
    expect(body.errors?.[0]).toMatchObject({
      message: 'operation has complexity 2700, which exceeds the limit of 2500',
      extensions: { code: 'COMPLEXITY_LIMIT_EXCEEDED', meta: { complexity: 2700, limit: 2500 } },
    });
  });
});

describe('the interactive page', () => {
  test('is not served unless SVC_DEV_GRAPHIQL is set', async () => {
    const response = await svc.request(`/api/graphql`, { headers: { accept: 'text/html' } });
    expect(response.headers.get('content-type') ?? '').not.toContain('text/html');
    await response.body?.cancel();
  });
  test('nor are its assets', async () => {
    const response = await svc.request(`/api/interactive-page/favicon.0000000000000000.ico`);
    expect(response.status).toBe(404);
    await response.body?.cancel();
  });
});

describe('operator probes', () => {
  test('healthz answers ok', async () => {
    const response = await svc.request(`/api/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  test('readyz answers ready once the database is reachable and migrations are current', async () => {
    const response = await svc.request(`/api/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ready' });
  });

  test('an unknown API path answers 404 JSON', async () => {
    const response = await svc.request(`/api/nope`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'not found' });
  });
});
