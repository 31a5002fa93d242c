// field_text_refused (SPEC 2.10): a field provider refuses a cell with a reason the
// importer does not read. The stock fields plugin names only reasons the importer reads,
// so this runs the importer beside a third-party provider of the SDK's fields service.
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { dataOf, freshWorkspaceHeaders } from '../../support/contacts.js';
import { repoRoot } from '../../support/env.js';
import { startTestService, type TestService } from '../../support/service.js';
import { uploadFile } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    plugins: { dir: path.join(repoRoot, 'tests/plugins/importer/fixtures/plugins') },
  });
});

afterAll(() => svc.stop());

test('a cell the field provider refuses for its own reason is field_text_refused', async () => {
  const { headers } = await freshWorkspaceHeaders(svc);
  const csv = 'name,email,motto\nAda,ada@example.com,Count the cost\nBea,bea@example.com,NEVER!\n';
  const { id } = dataOf<{ id: string }>(
    (await uploadFile(svc, csv, 'mottos.csv', headers)).body,
    'importUpload',
  );
  const { body: fields } = await svc.graph('{ importFields { key kind } }', {}, headers);
  expect(dataOf(fields, 'importFields')).toContainEqual({ key: 'field:motto', kind: 'text' });

  const { body: mapped } = await svc.graph(
    `mutation ($id: UUID!, $m: [ImportColumnInput!]!) {
      importSetMapping(id: $id, mapping: $m) { rows { line reason { code meta } } }
    }`,
    {
      id,
      m: [
        { column: 0, target: 'name' },
        { column: 1, target: 'identity:email' },
        { column: 2, target: 'field:motto' },
      ],
    },
    headers,
  );
  expect(dataOf<{ rows: unknown[] }>(mapped, 'importSetMapping').rows).toEqual([
    { line: 2, reason: null },
    { line: 3, reason: { code: 'field_text_refused', meta: {} } },
  ]);

  const { body: committed } = await svc.graph(
    'mutation ($id: UUID!) { importCommit(id: $id) { createdCount skippedCount } }',
    { id },
    headers,
  );
  expect(dataOf(committed, 'importCommit')).toEqual({ createdCount: 1, skippedCount: 1 });
});
