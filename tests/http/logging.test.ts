// What the service logs, and at which level: `error` is for the service's own failures;
// a client's mistake is one line at `debug` (reason, operation, caller kind), none at `info`. A start that cannot listen says so in
// one line. `svc dev` writes lines for a person, `svc serve` JSON.
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { GraphQLError } from 'graphql';
import { refuse } from '../../src/errors.js';
import { yogaErrorLevel } from '../../src/graph/yoga-log.js';
import { runSvc } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { useTestService, type LogLine, type TestService } from '../support/service.js';

const LOGIN =
  'mutation SignIn($e: String!, $p: String!) { login(email: $e, password: $p) { __typename } }';

/** The lines `svc` logged while `run` ran against it, `trace` left out. */
async function linesDuring(
  svc: TestService,
  run: (svc: TestService) => Promise<unknown>,
): Promise<LogLine[]> {
  const from = svc.lines.length;
  await run(svc);
  return svc.lines.slice(from).filter((line) => line.level !== 'trace');
}

describe('levels of refusals', () => {
  const service = useTestService({ env: { SVC_DEV_GRAPHIQL: '1' } });

  test('a wrong password is one line at debug naming reason, operation and caller kind', async () => {
    const lines = await linesDuring(service(), async (svc) => {
      const { body } = await svc.anonymous(LOGIN, { e: svc.admin.email, p: 'not the password' });
      expect(body.errors?.[0]?.extensions.reason).toBe('credentials_invalid');
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'debug',
        msg: 'operation refused',
        reason: 'credentials_invalid',
        code: 'UNAUTHENTICATED',
        operation: 'SignIn',
        caller: 'anonymous',
      }),
    ]);
    // One line: nothing of the error object (message, locations, path) beyond its reason.
    expect(Object.keys(lines[0]!)).not.toContain('yoga');
  });

  test('a validation refusal is one line at debug, none at info or error', async () => {
    const lines = await linesDuring(service(), async (svc) => {
      const { body } = await svc.graph('query Find($id: UUID!) { contact(id: $id) { id } }', {
        id: 'not-a-uuid',
      });
      expect(body.errors?.[0]?.extensions.code).toBe('VALIDATION');
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'debug',
        reason: 'value_malformed',
        operation: 'Find',
        caller: 'token',
      }),
    ]);
  });

  test('a refused GET logs nothing at info or above', async () => {
    const lines = await linesDuring(service(), async (svc) => {
      const response = await svc.request('/api/graphql?query=mutation{logout}', {
        headers: { ...svc.adminHeaders, accept: 'application/json' },
      });
      expect(response.status).toBe(405);
      await response.text();
    });
    expect(lines.filter((line) => line.level !== 'debug')).toEqual([]);
    expect(lines.length).toBeLessThanOrEqual(1);
  });

  test('an INTERNAL still logs its error at error level', async () => {
    const svc = service();
    const from = svc.lines.length;
    // A statement PostgreSQL refuses is no refusal of the client: the masker logs it.
    await svc.db.database.sql`alter table contacts rename to contacts_away`;
    try {
      const { body } = await svc.graph(
        'query Everyone { contacts(first: 1) { edges { node { id } } } }',
      );
      expect(body.errors?.[0]?.extensions.code).toBe('INTERNAL');
    } finally {
      await svc.db.database.sql`alter table contacts_away rename to contacts`;
    }
    const errors = svc.lines.slice(from).filter((line) => line.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.msg).toBe('unexpected error in a graph operation');
  });
});

describe('yogaErrorLevel', () => {
  test('a refusal is silent (the observer logs it), an INTERNAL the masker logged is debug, a failure is error', () => {
    expect(yogaErrorLevel([refuse('credentials_invalid')])).toBe('silent');
    expect(yogaErrorLevel([new GraphQLError('x', { extensions: { code: 'INTERNAL' } })])).toBe(
      'debug',
    );
    expect(yogaErrorLevel([new GraphQLError('x', { extensions: { http: { status: 503 } } })])).toBe(
      'error',
    );
    expect(yogaErrorLevel([new Error('the service failed')])).toBe('error');
  });
});

describe('starting on an address in use', () => {
  const databases: TestDatabase[] = [];
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => holder?.close(resolve));
    for (const db of databases) await db.drop();
  });

  test.each([
    ['serve', 'JSON'],
    ['dev', 'readable lines'],
  ])('svc %s exits 1 with one clear line and no stack; its log is %s', async (command) => {
    // An empty database, so the start logs its migrations before it tries to listen.
    const db = await createTestDatabase({ empty: true });
    databases.push(db);
    const result = await runSvc([command], {
      SVC_DATABASE_URL: db.url,
      SVC_ADDR: `127.0.0.1:${port}`,
    });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      `svc: cannot listen on 127.0.0.1:${port}: the address is already in use (EADDRINUSE); ` +
        'stop what holds it or set SVC_ADDR',
    ]);
    const output = result.stdout + result.stderr;
    expect(output).not.toMatch(/\n\s+at /); // no stack frame anywhere
    const lines = result.stdout.trim().split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    if (command === 'serve') {
      const parsed = lines.map((line) => JSON.parse(line) as LogLine);
      expect(parsed.filter((line) => line.level === 'error' || line.level === 'warn')).toEqual([]);
    } else {
      for (const line of lines) expect(() => JSON.parse(line)).toThrow();
      expect(result.stdout).toMatch(/INFO.*: migrations applied/);
      expect(result.stdout).not.toMatch(/ERROR|WARN/);
    }
  });
});
