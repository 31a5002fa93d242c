// The importer's export (docs/importer.md "Export"): exportContacts with contactPage's
// filters, the file streamed from the export route in CSV and .xlsx, the formula rule for
// every leading character, who may download, and a workspace exported and imported into
// another giving the same contacts, identities and field values.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as XLSX from 'xlsx';
import { parse } from 'csv-parse/sync';
import { createContactVia, dataOf, freshWorkspaceHeaders } from '../../support/contacts.js';
import { bearer, createUser, tokenFor } from '../../support/factories.js';
import { startTestService, type TestService } from '../../support/service.js';
import { uploadFile } from './support.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ plugins: {} });
});

afterAll(() => svc.stop());

type Headers = Record<string, string>;

const EXPORT = `mutation ($format: ImporterExportFormat!, $q: String, $channels: [String!],
  $field: FieldCondition) {
  exportContacts(format: $format, q: $q, channels: $channels, field: $field) {
    id format contactCount url createdAt expiresAt
  }
}`;
const DEFINE = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { id } }`;
const WRITE = `mutation ($contactId: UUID!, $values: JSON!) {
  writeContactFields(contactId: $contactId, values: $values) { id }
}`;
const ENTRY = `mutation ($contactId: UUID!, $field: String!, $values: JSON!) {
  addContactFieldEntry(contactId: $contactId, field: $field, values: $values) { id }
}`;
const EVERYONE = `{ contactPage(limit: 100) { items { name identities { channel identifier }
  fieldValues } } }`;

interface ExportData {
  id: string;
  format: string;
  contactCount: number;
  url: string;
  expiresAt: string;
}

async function startExport(
  headers: Headers,
  variables: Record<string, unknown> = {},
): Promise<ExportData> {
  const { body } = await svc.graph(EXPORT, { format: 'CSV', ...variables }, headers);
  return dataOf<ExportData>(body, 'exportContacts');
}

async function download(url: string, headers: Headers): Promise<Response> {
  return svc.request(url, { headers });
}

/** The CSV's records (header first), read as a spreadsheet program would split them. */
async function csvRecords(response: Response): Promise<string[][]> {
  const bytes = Buffer.from(await response.arrayBuffer());
  // A BOM first, so a spreadsheet program reads UTF-8.
  expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
  return parse(bytes.subarray(3).toString('utf8'), { relax_column_count: false }) as string[][];
}

function xlsxRecords(bytes: Buffer): string[][] {
  const book = XLSX.read(bytes, { type: 'buffer', cellFormula: true });
  const sheet = book.Sheets[book.SheetNames[0]!]!;
  return XLSX.utils.sheet_to_json<string[]>(sheet, { header: 1, raw: false, defval: '' });
}

async function defineFields(headers: Headers) {
  const inputs = [
    { name: 'tier', label: 'Tier', kind: 'select', options: ['Gold', 'Silver'] },
    { name: 'tags', label: 'Tags', kind: 'multi_select', options: ['a;b', 'vip', 'new'] },
    { name: 'vip', label: 'VIP', kind: 'boolean' },
    { name: 'score', label: 'Score', kind: 'number' },
    { name: 'budget', label: 'Budget', kind: 'currency', currency: 'EUR' },
    { name: 'born', label: 'Born', kind: 'date' },
    { name: 'motto', label: 'Motto', kind: 'text' },
    {
      name: 'addresses',
      label: 'Addresses',
      kind: 'repeater',
      subFields: [{ name: 'street', label: 'Street', kind: 'text' }],
    },
  ];
  for (const input of inputs)
    dataOf((await svc.graph(DEFINE, { input }, headers)).body, 'defineField');
}

/** A workspace with fields and three contacts holding every kind of value. */
async function populated() {
  const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
  await defineFields(headers);
  const ada = await createContactVia(
    svc,
    'Ada Lovelace',
    [
      { channel: 'email', identifier: 'ada@example.com' },
      { channel: 'email', identifier: 'ada@work.example' },
      { channel: 'phone', identifier: '+44 20 7946 0000' },
    ],
    headers,
  );
  const values = {
    tier: 'Gold',
    tags: ['a;b', 'vip'],
    vip: true,
    score: '-12.5',
    budget: '1999.9',
    born: '1815-12-10',
    motto: '=HYPERLINK("http://evil.example")',
  };
  dataOf(
    (await svc.graph(WRITE, { contactId: ada.id, values }, headers)).body,
    'writeContactFields',
  );
  for (const street of ['1 St James’s Square', 'Ockham Park']) {
    dataOf(
      (
        await svc.graph(
          ENTRY,
          { contactId: ada.id, field: 'addresses', values: { street } },
          headers,
        )
      ).body,
      'addContactFieldEntry',
    );
  }
  const bea = await createContactVia(
    svc,
    'Bea',
    [{ channel: 'email', identifier: 'bea@example.com' }],
    headers,
  );
  dataOf(
    (await svc.graph(WRITE, { contactId: bea.id, values: { vip: false, tier: 'Silver' } }, headers))
      .body,
    'writeContactFields',
  );
  await createContactVia(svc, '@cal', [{ channel: 'phone', identifier: '+1 555 0100' }], headers);
  return { headers, workspaceId };
}

describe('exportContacts', () => {
  test('a CSV of every contact: name, a column per channel, one per live field', async () => {
    const { headers } = await populated();
    const started = await startExport(headers);
    expect(started).toEqual(
      expect.objectContaining({
        format: 'CSV',
        contactCount: 3,
        url: `/api/plugins/importer/exports/${started.id}/file`,
      }),
    );
    const response = await download(started.url, headers);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="contacts-/);
    expect(response.headers.get('cache-control')).toBe('private, no-store');
    const records = await csvRecords(response);
    expect(records[0]).toEqual([
      'name',
      'identity:email',
      'identity:phone',
      'identity:chat',
      'field:tier',
      'field:tags',
      'field:vip',
      'field:score',
      'field:budget',
      'field:born',
      'field:motto',
      'field:addresses',
    ]);
    // By name A to Z; formula-looking cells keep their leading apostrophe in the file.
    expect(records.slice(1)).toEqual([
      ["'@cal", '', "'+1 555 0100", '', '', '', '', '', '', '', '', ''],
      [
        'Ada Lovelace',
        'ada@example.com; ada@work.example',
        "'+44 20 7946 0000",
        '',
        'Gold',
        'a\\;b; vip',
        'true',
        "'-12.5",
        '1999.90',
        '1815-12-10',
        `'=HYPERLINK("http://evil.example")`,
        JSON.stringify([{ street: '1 St James’s Square' }, { street: 'Ockham Park' }]),
      ],
      ['Bea', 'bea@example.com', '', '', 'Silver', '', 'false', '', '', '', '', ''],
    ]);
  });

  test('an .xlsx of the same rows, every cell a string and none a formula', async () => {
    const { headers } = await populated();
    const started = await startExport(headers, { format: 'XLSX' });
    const response = await download(started.url, headers);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    );
    const bytes = Buffer.from(await response.arrayBuffer());
    const book = XLSX.read(bytes, { type: 'buffer', cellFormula: true });
    const sheet = book.Sheets[book.SheetNames[0]!]!;
    const cells = Object.entries(sheet).filter(([key]) => !key.startsWith('!'));
    expect(cells.length).toBeGreaterThan(0);
    for (const [, cell] of cells) {
      expect((cell as XLSX.CellObject).t).toBe('s');
      expect((cell as XLSX.CellObject).f).toBeUndefined();
    }
    const records = xlsxRecords(bytes);
    expect(records[1]).toEqual(['@cal', '', '+1 555 0100', '', '', '', '', '', '', '', '', '']);
    expect(records[2]?.[10]).toBe('=HYPERLINK("http://evil.example")');
    expect(records[2]?.[7]).toBe('-12.5');
  });

  test('takes contactPage’s filters: q, channels and the fields plugin’s field', async () => {
    const { headers } = await populated();
    const names = async (variables: Record<string, unknown>) => {
      const started = await startExport(headers, variables);
      const records = await csvRecords(await download(started.url, headers));
      expect(started.contactCount).toBe(records.length - 1);
      return records.slice(1).map((record) => record[0]);
    };
    expect(await names({ q: 'lovelace' })).toEqual(['Ada Lovelace']);
    expect(await names({ channels: ['phone'] })).toEqual(["'@cal", 'Ada Lovelace']);
    expect(await names({ field: { name: 'tier', equals: 'Silver' } })).toEqual(['Bea']);
    const { body } = await svc.graph(
      EXPORT,
      { format: 'CSV', field: { name: 'nope', equals: 'x' } },
      headers,
    );
    expect(body.errors?.[0]?.extensions.reason).toBe('field_unknown');
  });

  test('every leading formula character stays text, in CSV and in .xlsx', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const names = ['=1+1', '+1', '-1', '@SUM(A1)', "'=x", "'t Hooft", 'plain'];
    for (const [i, name] of names.entries()) {
      await createContactVia(
        svc,
        name,
        [{ channel: 'email', identifier: `c${i}@x.example` }],
        headers,
      );
    }
    // The graph trims a name: a tab or carriage return first arrives only from elsewhere.
    for (const name of ['\tx', '\rx']) {
      await svc.db.database.sql`insert into contacts (workspace_id, name)
        values (${workspaceId}, ${name})`;
    }
    const all = [...names, '\tx', '\rx'];
    const escaped = new Map([
      ['=1+1', "'=1+1"],
      ['+1', "'+1"],
      ['-1', "'-1"],
      ['@SUM(A1)', "'@SUM(A1)"],
      ["'=x", "''=x"],
      ['\tx', "'\tx"],
      ['\rx', "'\rx"],
    ]);
    const csv = await csvRecords(await download((await startExport(headers)).url, headers));
    const written = csv.slice(1).map((record) => record[0]!);
    expect(written.sort()).toEqual(all.map((name) => escaped.get(name) ?? name).sort());

    const xlsxUrl = (await startExport(headers, { format: 'XLSX' })).url;
    const bytes = Buffer.from(await (await download(xlsxUrl, headers)).arrayBuffer());
    const sheet = XLSX.read(bytes, { type: 'buffer', cellFormula: true }).Sheets.Contacts!;
    const column = Object.entries(sheet).filter(([key]) => /^A\d+$/.test(key) && key !== 'A1');
    expect(column.map(([, cell]) => (cell as XLSX.CellObject).v).sort()).toEqual([...all].sort());
    for (const [, cell] of column) {
      expect((cell as XLSX.CellObject).t).toBe('s');
      expect((cell as XLSX.CellObject).f).toBeUndefined();
    }
  });

  test('the rule undone on import: exactly one apostrophe, only before a formula start', async () => {
    const { escapeFormula } = await import('../../../plugins/importer/export-cells.js');
    const { unescapeFormula } = (await import(
      '../../../plugins/importer/parse.worker.mjs' as string
    )) as { unescapeFormula: (cell: string) => string };
    for (const lead of ['=', '+', '-', '@', '\t', '\r']) {
      expect(escapeFormula(`${lead}x`)).toBe(`'${lead}x`);
      expect(escapeFormula(`'${lead}x`)).toBe(`''${lead}x`);
      expect(unescapeFormula(escapeFormula(`${lead}x`))).toBe(`${lead}x`);
      expect(unescapeFormula(escapeFormula(`'${lead}x`))).toBe(`'${lead}x`);
    }
    for (const kept of ["'t Hooft", 'plain', "'", '', 'a=b']) {
      expect(escapeFormula(kept)).toBe(kept);
      expect(unescapeFormula(kept)).toBe(kept);
    }
  });
});

describe('who may download an export', () => {
  test('its creator only: another workspace, another user, anonymous and unknown ids are not found', async () => {
    const { headers, workspaceId } = await populated();
    const started = await startExport(headers);
    const db = svc.db.database.db;
    const catalogue = svc.service.access;
    // A member of the same workspace did not start it.
    const member = await createUser(db, { id: workspaceId }, { role: 'member' });
    const memberHeaders = bearer(await tokenFor(db, member, { catalogue }));
    // An admin of another workspace holding every area.
    const other = await freshWorkspaceHeaders(svc);
    for (const [who, asked] of [
      ['member', memberHeaders],
      ['other workspace', other.headers],
    ] as const) {
      const response = await download(started.url, asked);
      expect([who, response.status]).toEqual([who, 404]);
      expect(await response.json()).toEqual({ error: 'not found' });
    }
    expect((await download(started.url, {})).status).toBe(401);
    const unknown = started.url.replace(started.id, '00000000-0000-4000-8000-000000000000');
    expect((await download(unknown, headers)).status).toBe(404);
    expect((await download('/api/plugins/importer/exports/nope/file', headers)).status).toBe(404);
    // The other workspace's own export of its (empty) contacts holds none of these.
    const theirs = await startExport(other.headers);
    expect(theirs.contactCount).toBe(0);
    const records = await csvRecords(await download(theirs.url, other.headers));
    expect(records).toHaveLength(1);
  });

  test('a token needs imports:read and contacts:read, to start and to download', async () => {
    const { workspaceId } = await freshWorkspaceHeaders(svc);
    const db = svc.db.database.db;
    const catalogue = svc.service.access;
    const user = await createUser(db, { id: workspaceId }, { role: 'member' });
    const withScopes = async (scopes: string[]) =>
      bearer(await tokenFor(db, user, { catalogue, scopes }));
    const both = await withScopes(['imports:read', 'contacts:read']);
    for (const [scopes, missing] of [
      [['imports:read'], 'contacts:read'],
      [['contacts:read'], 'imports:read'],
    ] as const) {
      const { body } = await svc.graph(EXPORT, { format: 'CSV' }, await withScopes([...scopes]));
      expect(body.errors?.[0]?.extensions).toEqual(
        expect.objectContaining({ reason: 'scope_missing', meta: { scope: missing } }),
      );
    }
    const started = await startExport(both);
    expect((await download(started.url, both)).status).toBe(200);
    // The same user's narrower tokens: the route's area, then the contacts it reads.
    const importsOnly = await download(started.url, await withScopes(['imports:read']));
    expect(importsOnly.status).toBe(403);
    expect(await importsOnly.json()).toEqual({ error: 'scope required: contacts:read' });
    const contactsOnly = await download(started.url, await withScopes(['contacts:read']));
    expect(contactsOnly.status).toBe(403);
    expect(await contactsOnly.json()).toEqual({ error: 'scope required: imports:read' });
  });

  test('an expired export is not found, and the sweep deletes it', async () => {
    const { headers, workspaceId } = await freshWorkspaceHeaders(svc);
    const started = await startExport(headers);
    const { sql } = svc.db.database;
    await sql`update contact_exports set expires_at = now() - interval '1 second'
      where workspace_id = ${workspaceId} and id = ${started.id}`;
    expect((await download(started.url, headers)).status).toBe(404);
    const { exportSweep } = await import('../../../plugins/importer/export.js');
    expect(await exportSweep.run(svc.db.database.db)).toBeGreaterThanOrEqual(1);
    const left = await sql`select 1 from contact_exports where id = ${started.id}`;
    expect(left).toHaveLength(0);
  });
});

const MAP = `mutation ($id: UUID!, $mapping: [ImportColumnInput!]!) {
  importSetMapping(id: $id, mapping: $mapping) { id state }
}`;
const COMMIT = `mutation ($id: UUID!) { importCommit(id: $id) { state createdCount skippedCount } }`;

interface PageItem {
  name: string;
  identities: { channel: string; identifier: string }[];
  fieldValues: Record<string, unknown>;
}

/** Every contact of the workspace, identities sorted, values without the repeater. */
async function everyone(headers: Headers) {
  const { body } = await svc.graph(EVERYONE, {}, headers);
  const items = dataOf<{ items: PageItem[] }>(body, 'contactPage').items;
  return items.map(({ name, identities, fieldValues }) => {
    const { addresses: _entries, ...values } = fieldValues;
    const keys = identities.map(({ channel, identifier }) => `${channel}:${identifier}`);
    return { name, identities: keys.sort(), values };
  });
}

describe('round trip', () => {
  for (const format of ['CSV', 'XLSX'] as const) {
    test(`a workspace exported as ${format} and imported into another is the same`, async () => {
      const source = await populated();
      const started = await startExport(source.headers, { format });
      const file = Buffer.from(await (await download(started.url, source.headers)).arrayBuffer());

      const target = await freshWorkspaceHeaders(svc);
      await defineFields(target.headers);
      const name = `contacts.${format.toLowerCase()}`;
      const staged = dataOf<{ id: string; columns: string[]; rowCount: number }>(
        (await uploadFile(svc, file, name, target.headers)).body,
        'importUpload',
      );
      expect(staged.rowCount).toBe(3);
      // The header names importFields' keys: each column maps to itself where offered.
      const { body: offered } = await svc.graph('{ importFields { key } }', {}, target.headers);
      const keys = new Set(dataOf<{ key: string }[]>(offered, 'importFields').map((f) => f.key));
      const mapping = staged.columns
        .map((target, column) => ({ column, target }))
        .filter(({ target }) => keys.has(target));
      expect(mapping.map(({ target }) => target)).toEqual([
        'name',
        'identity:email',
        'identity:phone',
        'field:tier',
        'field:tags',
        'field:vip',
        'field:score',
        'field:budget',
        'field:born',
        'field:motto',
      ]);
      dataOf(
        (await svc.graph(MAP, { id: staged.id, mapping }, target.headers)).body,
        'importSetMapping',
      );
      const committed = dataOf<{ createdCount: number; skippedCount: number }>(
        (await svc.graph(COMMIT, { id: staged.id }, target.headers)).body,
        'importCommit',
      );
      expect(committed).toEqual(expect.objectContaining({ createdCount: 3, skippedCount: 0 }));
      const before = await everyone(source.headers);
      expect(before[1]?.values).toEqual(
        expect.objectContaining({ vip: true, tags: ['a;b', 'vip'], score: '-12.5' }),
      );
      expect(await everyone(target.headers)).toEqual(before);
    });
  }
});
