// The fields plugin across processes and at scale: a definition changed through one
// server is seen by another at once (NOTIFY, not the refresh), a page's values read in a
// constant number of statements, and the SDK service another plugin writes values with.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { drizzle } from 'drizzle-orm/postgres-js';
import { startService, type Service } from '../../../src/server.js';
import { RequestLoaders } from '../../../src/loaders.js';
import { sql } from 'drizzle-orm';
import { AppError, findService, type Context } from '../../../src/plugin-sdk/index.js';
import { readField } from '../../../plugins/fields/values.js';
import { liveDefinitions } from '../../../plugins/fields/definitions.js';
import { createContactVia, dataOf, freshWorkspaceHeaders } from '../../support/contacts.js';
import {
  captureLogger,
  startTestService,
  testConfig,
  type TestService,
} from '../../support/service.js';
import { ADD_ENTRY, DEFINE, FIELDS, READ, WRITE, fieldInput, type FieldData } from './support.js';

// Far longer than the test: only an announcement can make the second server see a change.
const env = { SVC_TENANTS_REFRESH: '10m' };
let svc: TestService;
let second: Service;

beforeAll(async () => {
  svc = await startTestService({ plugins: {}, env });
  second = await startService({
    config: testConfig(env),
    log: captureLogger().log,
    databaseUrl: svc.db.url,
    plugins: {},
    listen: false,
  });
});

afterAll(async () => {
  await second.shutdown();
  await svc.stop();
});

/** The field names a server answers, reached in-process. */
async function namesAt(server: Pick<Service, 'fetch'>): Promise<string[]> {
  const response = await server.fetch(
    new Request('http://127.0.0.1/api/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...svc.adminHeaders },
      body: JSON.stringify({ query: FIELDS }),
    }),
  );
  const body = (await response.json()) as { data: { fields: FieldData[] } };
  return body.data.fields.map((field) => field.name);
}

/** Reads the second server until it answers `expected` or `ms` pass; answers the last read. */
async function secondSeesWithin(expected: string[], ms: number): Promise<string[]> {
  const until = Date.now() + ms;
  let seen = await namesAt(second);
  while (JSON.stringify(seen) !== JSON.stringify(expected) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    seen = await namesAt(second);
  }
  return seen;
}

describe('definitions across processes', () => {
  test('a change through one server is seen by another at once, not after the refresh', async () => {
    expect(await namesAt(second)).toEqual([]); // now held for SVC_TENANTS_REFRESH
    const { body } = await svc.graph(DEFINE, { input: fieldInput('tier', 'text') });
    const field = dataOf<FieldData>(body, 'defineField');
    expect(await namesAt(svc.service)).toEqual(['tier']);
    expect(await secondSeesWithin(['tier'], 5000)).toEqual(['tier']);

    await svc.graph(`mutation ($id: UUID!) { archiveField(id: $id) { id } }`, { id: field.id });
    expect(await secondSeesWithin([], 5000)).toEqual([]);
  });
});

describe('reads at scale', () => {
  test('a page of contacts with twenty values and a repeater of fifty entries reads in two statements', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const names = Array.from({ length: 19 }, (_, i) => `note${i}`);
    for (const name of names) {
      dataOf(
        (await svc.graph(DEFINE, { input: fieldInput(name, 'text') }, headers)).body,
        'defineField',
      );
    }
    const subFields = [{ name: 'street', label: 'Street', kind: 'text' }];
    dataOf(
      (
        await svc.graph(
          DEFINE,
          { input: fieldInput('addresses', 'repeater', { subFields }) },
          headers,
        )
      ).body,
      'defineField',
    );
    const contacts: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const id = (await createContactVia(svc, `Contact ${i}`, [], headers)).id;
      const values = Object.fromEntries(names.map((name) => [name, `${name} of ${i}`]));
      dataOf(
        (await svc.graph(WRITE, { contactId: id, values }, headers)).body,
        'writeContactFields',
      );
      contacts.push(id);
    }
    // Fifty entries on one contact, written directly: the graph's cap is the test's concern elsewhere.
    await svc.db.database.sql`
      insert into contact_field_entries (workspace_id, contact_id, field_id, cells)
      select ${workspaceId}, ${contacts[0]!}, id, jsonb_build_object('street', 'No ' || n)
      from field_definitions, generate_series(1, 50) as n
      where workspace_id = ${workspaceId} and name = 'addresses'`;

    const statements: string[] = [];
    const logged = drizzle(svc.db.database.sql, {
      casing: 'snake_case',
      logger: { logQuery: (query) => void statements.push(query) },
    });
    const ctx = {
      config: testConfig(env),
      database: { ...svc.db.database, db: logged },
      workspaceId,
      actor: { workspaceId, userId: svc.admin.id },
      loaders: new RequestLoaders(logged, workspaceId),
    } as unknown as Context;
    const definitions = await liveDefinitions(ctx); // from the workspace cache (one read at most)
    statements.length = 0;
    const values = await Promise.all(
      contacts.flatMap((id) => definitions.map((definition) => readField(ctx, id, definition))),
    );
    expect(values).toHaveLength(20 * 20);
    expect(values[0]).toBe('note0 of 0');
    expect(values[19]).toHaveLength(50);
    expect(statements).toHaveLength(2);
  });
});

/** The first server's pool and settings: its workspace cache. */
const scope = () => ({ database: svc.service.database, config: testConfig(env) });

describe('the SDK service other plugins write values with', () => {
  test('lists the writable fields, judges values as the graph does and writes them in the caller’s transaction', async () => {
    const service = findService('fields');
    expect(service).toBeDefined();
    const { body } = await svc.graph(DEFINE, {
      input: fieldInput('budget', 'currency', { currency: 'EUR' }),
    });
    dataOf(body, 'defineField');
    const fields = await service!.writableFields(scope(), svc.workspace.id);
    expect(fields.map((field) => field.name)).toEqual(['budget']);
    expect(fields[0]).toEqual(expect.objectContaining({ kind: 'currency', currency: 'EUR' }));

    const refused = service!.checkValues(fields, { budget: 'lots' });
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).reason).toBe('value_kind_mismatch');
    expect((refused as AppError).meta).toEqual({ field: 'budget', kind: 'currency' });
    expect((service!.checkValues(fields, { colour: 1 }) as AppError).reason).toBe('field_unknown');

    const checked = service!.checkValues(fields, { budget: '99.5' });
    if (checked instanceof AppError) throw checked;
    const kept = (await createContactVia(svc, 'Kept')).id;
    const rolledBack = (await createContactVia(svc, 'Rolled back')).id;
    const db = svc.db.database.db;
    await db.transaction((tx) =>
      service!.writeValues(tx, {
        workspaceId: svc.workspace.id,
        contactId: kept,
        actorUserId: null,
        checked,
      }),
    );
    await expect(
      db.transaction(async (tx) => {
        await service!.writeValues(tx, {
          workspaceId: svc.workspace.id,
          contactId: rolledBack,
          actorUserId: null,
          checked,
        });
        throw new Error('the caller fails after writing');
      }),
    ).rejects.toThrow('the caller fails after writing');

    const read = async (id: string) =>
      dataOf<{ field: unknown }>((await svc.graph(READ, { id, name: 'budget' })).body, 'contact')
        .field;
    expect(await read(kept)).toEqual({ amount: '99.50', currency: 'EUR' });
    expect(await read(rolledBack)).toBeNull();
    const events = await svc.db.database.sql`
      select subject_id from events where name = 'contact.fields_changed'
      and subject_id in ${svc.db.database.sql([kept, rolledBack])}`;
    expect(events.map((row) => row.subject_id)).toEqual([kept]);
  });

  test('writeValuesMany writes many contacts’ values in batches, with or without events', async () => {
    const service = findService('fields')!;
    const fields = await service.writableFields(scope(), svc.workspace.id);
    const ids = [
      (await createContactVia(svc, 'Many one')).id,
      (await createContactVia(svc, 'Many two')).id,
    ];
    const checked = (budget: string | null) => {
      const result = service.checkValues(fields, { budget });
      if (result instanceof AppError) throw result;
      return result;
    };
    await svc.db.database.db.transaction((tx) =>
      service.writeValuesMany(tx, {
        workspaceId: svc.workspace.id,
        actorUserId: null,
        writes: ids.map((contactId, i) => ({ contactId, checked: checked(`${i + 1}`) })),
        event: false,
      }),
    );
    const read = async (id: string) =>
      dataOf<{ field: unknown }>((await svc.graph(READ, { id, name: 'budget' })).body, 'contact')
        .field;
    expect(await read(ids[0]!)).toEqual({ amount: '1.00', currency: 'EUR' });
    expect(await read(ids[1]!)).toEqual({ amount: '2.00', currency: 'EUR' });
    await svc.db.database.db.transaction((tx) =>
      service.writeValuesMany(tx, {
        workspaceId: svc.workspace.id,
        actorUserId: null,
        writes: [{ contactId: ids[0]!, checked: checked(null) }],
      }),
    );
    expect(await read(ids[0]!)).toBeNull();
    const events = await svc.db.database.sql`
      select subject_id from events where name = 'contact.fields_changed'
      and subject_id in ${svc.db.database.sql(ids)}`;
    expect(events.map((row) => row.subject_id)).toEqual([ids[0]]);
  });

  test('writeValuesFrom writes staged values in one statement, or fills only where none is held', async () => {
    const service = findService('fields')!;
    const [field] = await service.writableFields(scope(), svc.workspace.id);
    const ids = [
      (await createContactVia(svc, 'Staged one')).id,
      (await createContactVia(svc, 'Staged two')).id,
    ];
    /** `[contact, amount]` pairs as a staged select, in order. */
    const staged = (pairs: [string, string][]) =>
      sql`select contact_id, field_id, value from (values ${sql.join(
        pairs.map(
          ([id, amount], n) =>
            sql`(${n}, ${id}::uuid, ${field!.id}::uuid, ${JSON.stringify({ amount, currency: 'EUR' })}::jsonb)`,
        ),
        sql`, `,
      )}) as given(n, contact_id, field_id, value) order by n`;
    const write = (pairs: [string, string][], fill?: boolean) =>
      svc.db.database.db.transaction((tx) =>
        service.writeValuesFrom!(tx, {
          workspaceId: svc.workspace.id,
          values: staged(pairs),
          fill,
        }),
      );
    await write([[ids[0]!, '1.00']]);
    // Filling: the held value stays, and of two for one contact the first fills.
    await write(
      [
        [ids[0]!, '9.00'],
        [ids[1]!, '2.00'],
        [ids[1]!, '3.00'],
      ],
      true,
    );
    const read = async (id: string) =>
      dataOf<{ field: unknown }>((await svc.graph(READ, { id, name: 'budget' })).body, 'contact')
        .field;
    expect(await read(ids[0]!)).toEqual({ amount: '1.00', currency: 'EUR' });
    expect(await read(ids[1]!)).toEqual({ amount: '2.00', currency: 'EUR' });
    const events = await svc.db.database.sql`
      select 1 from events where name = 'contact.fields_changed'
      and subject_id in ${svc.db.database.sql(ids)}`;
    expect(events).toHaveLength(0);
  });

  test('an entry write through the graph never reaches another plugin as a writable field', async () => {
    const subFields = [{ name: 'street', label: 'Street', kind: 'text' }];
    const { body } = await svc.graph(DEFINE, {
      input: fieldInput('offices', 'repeater', { subFields }),
    });
    dataOf(body, 'defineField');
    const fields = await findService('fields')!.writableFields(scope(), svc.workspace.id);
    expect(fields.map((field) => field.name)).not.toContain('offices');
    const id = (await createContactVia(svc, 'Offices')).id;
    const added = await svc.graph(ADD_ENTRY, {
      contactId: id,
      field: 'offices',
      values: { street: 'x' },
    });
    expect(added.body.errors).toBeUndefined();
  });
});
