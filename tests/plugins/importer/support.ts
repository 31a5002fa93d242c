// What the importer's tests share: a multipart upload (GraphQL multipart request spec).
import { dataOf } from '../../support/contacts.js';
import type { GraphBody, TestService } from '../../support/service.js';

export { holdTable, waiterOn } from '../../support/locks.js';

export const UPLOAD = `mutation ($file: Upload!) {
  importUpload(file: $file) {
    id fileName format state columns rowCount
    rows(first: 200) { line cells reason { code meta } }
  }
}`;

/** POSTs `bytes` as the `file` variable of `query` (the admin's unless `headers` say). */
export async function uploadFile(
  svc: TestService,
  bytes: Uint8Array | string,
  name = 'contacts.csv',
  headers: Record<string, string> = svc.adminHeaders,
  query = UPLOAD,
): Promise<{ status: number; body: GraphBody }> {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query, variables: { file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', new Blob([bytes as BlobPart]), name);
  const response = await svc.request(`/api/graphql`, { method: 'POST', headers, body: form });
  return { status: response.status, body: (await response.json()) as GraphBody };
}

/** Maps staged import `id` by `mapping` (column → target) and commits it; its createdCount. */
export async function mapAndCommit(
  svc: TestService,
  id: string,
  mapping: readonly { column: number; target: string }[],
  headers: Record<string, string>,
): Promise<number> {
  dataOf(
    (
      await svc.graph(
        'mutation ($id: UUID!, $mapping: [ImportColumnInput!]!) { importSetMapping(id: $id, mapping: $mapping) { id } }',
        { id, mapping },
        headers,
      )
    ).body,
    'importSetMapping',
  );
  const committed = dataOf<{ createdCount: number }>(
    (
      await svc.graph(
        'mutation ($id: UUID!) { importCommit(id: $id) { createdCount } }',
        { id },
        headers,
      )
    ).body,
    'importCommit',
  );
  return committed.createdCount;
}
