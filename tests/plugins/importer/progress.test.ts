// An import's progress (issue 16, item 6): while its rows are staged or committed, other
// requests see the state and the rows done of rows move batch by batch; once the work ends
// the progress is gone, and work a dead process left reads as what it left.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dataOf, expectReason, freshWorkspaceHeaders } from '../../support/contacts.js';
import { startTestService, type TestService } from '../../support/service.js';
import { holdTable, mapAndCommit, uploadFile, waiterOn } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
  // Every progress a reader could have seen, in order: the table keeps only the last.
  await svc.db.database.sql.unsafe(`
    create table progress_seen (n bigserial, import_id uuid, stage text, done int, total int);
    create function progress_seen() returns trigger language plpgsql as $$
    begin
      insert into progress_seen (import_id, stage, done, total)
      values (new.import_id, new.stage, new.done, new.total);
      return new;
    end $$;
    create trigger progress_seen after insert or update on import_progress
      for each row execute function progress_seen();`);
});

afterAll(() => svc.stop());

const ROWS = 4_500;
const csv = [
  'name,email',
  ...Array.from({ length: ROWS }, (_, i) => `Person ${i},person.${i}@example.com`),
].join('\n');

const JOB = `query ($id: UUID!) { importJob(id: $id) { state progress { stage done total } } }`;
const LIST = `{ imports { id state progress { stage done total } } }`;

interface Seen {
  id: string;
  state: string;
  progress: { stage: string; done: number; total: number } | null;
}

async function seenProgress(id: string, stage: string) {
  return [
    ...(await svc.db.database.sql<{ stage: string; done: number; total: number }[]>`
    select stage, done, total from progress_seen
    where import_id = ${id} and stage = ${stage} order by n`),
  ];
}

describe('an import’s progress', () => {
  test('staging: the import is listed as staging with rows done of rows, then staged', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const lock = holdTable(svc, 'import_rows');
    await lock.held;
    const upload = uploadFile(svc, csv, 'people.csv', headers);
    await waiterOn(svc, 'import_rows');

    const [listed] = dataOf<Seen[]>((await svc.graph(LIST, {}, headers)).body, 'imports');
    expect(listed).toMatchObject({
      state: 'staging',
      progress: { stage: 'staging', done: 0, total: ROWS },
    });
    // A mapping sent now queues behind the staging and judges the rows once stored.
    const mapping = svc.graph(
      `mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { state } }`,
      {
        id: listed!.id,
        m: [
          { column: 0, target: 'name' },
          { column: 1, target: 'identity:email' },
        ],
      },
      headers,
    );

    await lock.release();
    const staged = dataOf<Seen>((await upload).body, 'importUpload');
    expect(staged).toMatchObject({ id: listed!.id, state: 'staged' });
    expect(dataOf((await mapping).body, 'importSetMapping')).toEqual({ state: 'mapped' });
    expect(dataOf((await svc.graph(JOB, { id: staged.id }, headers)).body, 'importJob')).toEqual({
      state: 'mapped',
      progress: null,
    });
    // Each batch of 2,000 rows moved it.
    expect(await seenProgress(staged.id, 'staging')).toEqual(
      [0, 2_000, 4_000, 4_500].map((done) => ({ stage: 'staging', done, total: ROWS })),
    );
  });

  test('committing: the import reads committing with rows done of rows, then committed', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const id = dataOf<{ id: string }>(
      (await uploadFile(svc, csv, 'people.csv', headers)).body,
      'importUpload',
    ).id;
    dataOf(
      (
        await svc.graph(
          `mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { id } }`,
          {
            id,
            m: [
              { column: 0, target: 'name' },
              { column: 1, target: 'identity:email' },
            ],
          },
          headers,
        )
      ).body,
      'importSetMapping',
    );
    const lock = holdTable(svc, 'contacts');
    await lock.held;
    const commit = svc.graph(
      'mutation ($id: UUID!) { importCommit(id: $id) { state createdCount progress { done } } }',
      { id },
      headers,
    );
    await waiterOn(svc, 'contacts');

    expect(dataOf((await svc.graph(JOB, { id }, headers)).body, 'importJob')).toEqual({
      state: 'committing',
      progress: { stage: 'committing', done: 0, total: ROWS },
    });

    await lock.release();
    expect(dataOf((await commit).body, 'importCommit')).toEqual({
      state: 'committed',
      createdCount: ROWS,
      progress: null,
    });
    expect(dataOf((await svc.graph(JOB, { id }, headers)).body, 'importJob')).toEqual({
      state: 'committed',
      progress: null,
    });
    expect(await seenProgress(id, 'committing')).toEqual(
      [0, 2_000, 4_000, 4_500].map((done) => ({ stage: 'committing', done, total: ROWS })),
    );
  });

  test('committing an import past 20,000 rows: the progress moves by a tenth of its rows', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const rows = 25_000;
    const big = [
      'name,email',
      ...Array.from({ length: rows }, (_, i) => `Person ${i},big.${i}@example.com`),
    ].join('\n');
    const { id } = dataOf<{ id: string }>(
      (await uploadFile(svc, big, 'big.csv', headers)).body,
      'importUpload',
    );
    const mapping = [
      { column: 0, target: 'name' },
      { column: 1, target: 'identity:email' },
    ];
    expect(await mapAndCommit(svc, id, mapping, headers)).toBe(rows);
    expect((await seenProgress(id, 'committing')).map((seen) => seen.done)).toEqual(
      Array.from({ length: 11 }, (_, i) => i * 2_500),
    );
  });

  test('work a dead process left: staging reads failed, a commit’s progress is gone', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const { sql } = svc.db.database;
    // A staging that started two deadlines ago and never finished.
    const [dead] = await sql<{ id: string }[]>`
      insert into imports (workspace_id, file_name, format, state, columns, row_count, created_at)
      values (${workspaceId}, 'dead.csv', 'csv', 'staging', '["name","email"]', 1,
              now() - interval '2 minutes')
      returning id`;
    expect(dataOf((await svc.graph(JOB, { id: dead!.id }, headers)).body, 'importJob')).toEqual({
      state: 'failed',
      progress: null,
    });
    expectReason(
      (
        await svc.graph(
          `mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { id } }`,
          {
            id: dead!.id,
            m: [
              { column: 0, target: 'name' },
              { column: 1, target: 'identity:email' },
            ],
          },
          headers,
        )
      ).body,
      'CONFLICT',
      'mapping_locked',
    );
    expectReason(
      (
        await svc.graph(
          'mutation ($id: UUID!) { importCommit(id: $id) { id } }',
          { id: dead!.id },
          headers,
        )
      ).body,
      'CONFLICT',
      'mapping_required',
    );

    // A mapped import whose commit died: the transaction left it mapped, the progress stale.
    const mapped = dataOf<{ id: string }>(
      (await uploadFile(svc, 'name,email\nAda,ada@example.com\n', 'a.csv', headers)).body,
      'importUpload',
    ).id;
    await sql`
      update imports set state = 'mapped', mapping = '["name","identity:email"]'
      where workspace_id = ${workspaceId} and id = ${mapped}`;
    await sql`
      insert into import_progress (workspace_id, import_id, stage, done, total, started_at)
      values (${workspaceId}, ${mapped}, 'committing', 0, 1, now() - interval '2 minutes')`;
    expect(dataOf((await svc.graph(JOB, { id: mapped }, headers)).body, 'importJob')).toEqual({
      state: 'mapped',
      progress: null,
    });
    expect(
      dataOf(
        (
          await svc.graph(
            'mutation ($id: UUID!) { importCommit(id: $id) { state createdCount } }',
            { id: mapped },
            headers,
          )
        ).body,
        'importCommit',
      ),
    ).toEqual({ state: 'committed', createdCount: 1 });
  });

  test('staging that fails leaves the import failed, with no rows and no progress', async () => {
    const { headers } = await freshWorkspaceHeaders(svc);
    const { sql } = svc.db.database;
    // The database refuses this file's rows (a storage failure the service can't foresee).
    await sql.unsafe(`
      create function refuse_rows() returns trigger language plpgsql as $$
      begin
        if new.cells->>0 = 'Refused Row' then raise exception 'refused by the test'; end if;
        return new;
      end $$;
      create trigger refuse_rows before insert on import_rows
        for each row execute function refuse_rows();`);
    try {
      const { body } = await uploadFile(
        svc,
        'name,email\nRefused Row,r@example.com\n',
        'r.csv',
        headers,
      );
      expect(body.errors?.[0]?.extensions.code).toBe('INTERNAL');
    } finally {
      await sql.unsafe('drop trigger refuse_rows on import_rows; drop function refuse_rows();');
    }
    const [failed] = dataOf<Seen[]>((await svc.graph(LIST, {}, headers)).body, 'imports');
    expect(failed).toMatchObject({ state: 'failed', progress: null });
    const { body } = await svc.graph(
      'query ($id: UUID!) { importJob(id: $id) { rowCount rows { line } } }',
      { id: failed!.id },
      headers,
    );
    expect(dataOf(body, 'importJob')).toEqual({ rowCount: 1, rows: [] });
  });
});
