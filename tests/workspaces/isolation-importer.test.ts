// The importer's ids from another workspace (B's import), answered exactly as a made-up id.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dataOf, freshWorkspaceHeaders } from '../support/contacts.js';
import { expectAnsweredAsUnknown } from '../support/isolation.js';
import { startTestService, type TestService } from '../support/service.js';
import { uploadFile } from '../plugins/importer/support.js';

let svc: TestService;
let b: Record<string, string>;
let bImport: string;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
  b = (await freshWorkspaceHeaders(svc)).headers;
  const { body } = await uploadFile(svc, 'name,email\nBea,bea@example.com\n', 'b.csv', b);
  bImport = dataOf<{ id: string }>(body, 'importUpload').id;
});

afterAll(() => svc.stop());

describe('import ids of another workspace', () => {
  test("importJob(id) and imports(before) with B's import", async () => {
    const before = await svc.graph('{ imports { id rowCount } }', {}, b);
    await expectAnsweredAsUnknown(
      svc,
      'importJob(id)',
      'query ($id: UUID!) { importJob(id: $id) { id rows { cells } } }',
      (id) => ({ id }),
      bImport,
    );
    await expectAnsweredAsUnknown(
      svc,
      'imports(before)',
      'query ($id: UUID) { imports(before: $id) { id } }',
      (id) => ({ id }),
      bImport,
    );
    expect((await svc.graph('{ imports { id rowCount } }', {}, b)).body).toEqual(before.body);
  });

  test("importSetMapping(id) and importCommit(id) with B's import", async () => {
    const before = await svc.graph(
      'query ($id: UUID!) { importJob(id: $id) { state mapping rows { reason { code } } } }',
      { id: bImport },
      b,
    );
    const mapping = [
      { column: 0, target: 'name' },
      { column: 1, target: 'identity:email' },
    ];
    await expectAnsweredAsUnknown(
      svc,
      'importSetMapping(id)',
      'mutation ($id: UUID!, $m: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $m) { id } }',
      (id) => ({ id, m: mapping }),
      bImport,
    );
    await expectAnsweredAsUnknown(
      svc,
      'importCommit(id)',
      'mutation ($id: UUID!) { importCommit(id: $id) { id } }',
      (id) => ({ id }),
      bImport,
    );
    const after = await svc.graph(
      'query ($id: UUID!) { importJob(id: $id) { state mapping rows { reason { code } } } }',
      { id: bImport },
      b,
    );
    expect(after.body).toEqual(before.body);
  });
});
