// What the service logs, and at which level: `error` is for the service's own failures;
// a client's mistake is logged once, at `info`. A start that cannot listen says so in
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
  'mutation ($e: String!, $p: String!) { login(email: $e, password: $p) { __typename } }';

/** The lines `svc` logged while `run` ran against it. */
async function linesDuring(
  svc: TestService,
  run: (svc: TestService) => Promise<unknown>,
): Promise<LogLine[]> {
  const from = svc.lines.length;
  await run(svc);
  return svc.lines.slice(from).filter((line) => line.level !== 'debug');
}

describe('levels of refusals', () => {
  const service = useTestService({ env: { SVC_DEV_GRAPHIQL: '1' } });

  test('a wrong password is logged once, at info, never at error', async () => {
    const lines = await linesDuring(service(), async (svc) => {
      const { body } = await svc.anonymous(LOGIN, { e: svc.admin.email, p: 'not the password' });
      expect(body.errors?.[0]?.extensions.reason).toBe('credentials_invalid');
    });
    expect(lines.map((line) => line.level)).toEqual(['info']);
    expect(JSON.stringify(lines[0])).toContain('credentials_invalid');
  });

  test('a validation refusal is logged at info, never at error', async () => {
    const lines = await linesDuring(service(), async (svc) => {
      const { body } = await svc.graph('query ($id: UUID!) { contact(id: $id) { id } }', {
        id: 'not-a-uuid',
      });
      expect(body.errors?.[0]?.extensions.code).toBe('VALIDATION');
    });
    expect(lines.map((line) => line.level)).toEqual(['info']);
    expect(JSON.stringify(lines[0])).toContain('value_malformed');
  });

  test('a refused GET logs one line, not two', async () => {
    const lines = await linesDuring(service(), async (svc) => {
      const response = await fetch(`${svc.url}/api/graphql?query=mutation{logout}`, {
        headers: { ...svc.adminHeaders, accept: 'application/json' },
      });
      expect(response.status).toBe(405);
      await response.text();
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe('info');
    expect(JSON.stringify(lines[0])).toContain('Can only perform a mutation operation');
  });
});

describe('yogaErrorLevel', () => {
  test('a refusal is info, an INTERNAL the masker logged is debug, a failure is error', () => {
    expect(yogaErrorLevel([refuse('credentials_invalid')])).toBe('info');
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
