// The contactData hook (docs/contacts.md, docs/plugins.md): every plugin whose tables
// reference contacts declares how its rows follow an erased or merged contact, and the
// core calls it in the erasing transaction, for a third-party plugin as for the stock ones.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { contactDataPlugins } from '../../src/contacts/contact-data.js';
import { loadPlugins, stockPluginsDir } from '../../src/plugin-host/host.js';
import { dataOf } from '../support/contacts.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures');

describe('a plugin whose tables reference contacts', () => {
  test('without contactData, loading it fails naming the hook', async () => {
    await expect(
      loadPlugins({ dir: path.join(fixtures, 'plugins-contact-data-missing') }),
    ).rejects.toThrow(
      'plugin loose: its tables reference contacts, so it must declare contactData',
    );
  });

  test('every table of the migrated schema referencing contacts is the core’s or a plugin’s that declares contactData', async () => {
    const db: TestDatabase = await createTestDatabase();
    try {
      const plugins = await loadPlugins();
      const rows = await db.database.sql<{ table: string }[]>`
        select distinct conrelid::regclass::text as table from pg_constraint
        where contype = 'f' and confrelid = 'contacts'::regclass`;
      const owners = new Map<string, string>();
      for (const plugin of plugins) {
        const folder = path.join(stockPluginsDir, plugin.manifest.id, 'drizzle');
        for (const file of readdirSync(folder).filter((name) => name.endsWith('.sql'))) {
          const text = readFileSync(path.join(folder, file), 'utf8');
          for (const [, table] of text.matchAll(/CREATE TABLE "([a-z_]+)"/g)) {
            owners.set(table!, plugin.manifest.id);
          }
        }
      }
      const declared = new Set(
        plugins.filter((p) => p.definition?.contactData).map((p) => p.manifest.id),
      );
      const core = new Set(['contact_identities', 'tasks']);
      const unowned = rows
        .map((row) => row.table)
        .filter((table) => !core.has(table) && !declared.has(owners.get(table) ?? ''));
      expect(unowned).toEqual([]);
      expect(rows.length).toBeGreaterThan(core.size);
      expect(contactDataPlugins().sort()).toEqual(['chat', 'fields', 'importer', 'note']);
    } finally {
      await db.drop();
    }
  });
});

describe('a third-party plugin declaring contactData', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService({ plugins: { dir: path.join(fixtures, 'plugins-contact-data') } });
  });

  afterAll(() => svc.stop());

  async function contactWithNote(name: string): Promise<string> {
    const { body } = await svc.graph(
      'mutation ($name: String!) { createContact(input: { name: $name }) { id } }',
      { name },
    );
    const id = dataOf<{ id: string }>(body, 'createContact').id;
    await svc.db.database.sql`
      insert into keeper_notes (workspace_id, contact_id, text)
      values (${svc.workspace.id}, ${id}, ${`about ${name}`})`;
    return id;
  }

  const notesOf = (id: string) =>
    svc.db.database.sql<{ text: string }[]>`
      select text from keeper_notes where contact_id = ${id} order by text`;

  test('its rows go with an erased contact, in the same transaction (its foreign key does not cascade)', async () => {
    const id = await contactWithNote('Hugo');
    const { body } = await svc.graph('mutation ($id: UUID!) { deleteContact(id: $id) { id } }', {
      id,
    });
    expect(body).toEqual({ data: { deleteContact: { id } } });
    expect(await notesOf(id)).toEqual([]);
  });

  test('its rows move to a merge’s target', async () => {
    const target = await contactWithNote('Ida');
    const source = await contactWithNote('Ivo');
    const { body } = await svc.graph(
      'mutation ($t: UUID!, $s: [UUID!]!) { mergeContacts(targetId: $t, sourceIds: $s) { mergedIds } }',
      { t: target, s: [source] },
    );
    expect(body).toEqual({ data: { mergeContacts: { mergedIds: [source] } } });
    expect(await notesOf(target)).toEqual([{ text: 'about Ida' }, { text: 'about Ivo' }]);
  });
});
