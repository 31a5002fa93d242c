import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { createDatabase, type Database } from '../../src/db/client.js';
import { getWorkspaceCached } from '../../src/workspaces/cache.js';
import { setWorkspaceDeactivated } from '../../src/workspaces/service.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createWorkspace } from '../support/factories.js';

// Two pools stand for two server processes sharing one database.
let db: TestDatabase;
let second: Database;
beforeAll(async () => {
  db = await createTestDatabase();
  second = createDatabase(db.url, { max: 2 });
});
afterAll(async () => {
  await second.close();
  await db.drop();
});

describe('getWorkspaceCached', () => {
  test('a change through one process is seen by another once its entry is SVC_TENANTS_REFRESH old', async () => {
    const { config } = loadConfig({ SVC_TENANTS_REFRESH: '1ms' });
    const held = loadConfig({}).config; // 1m refresh
    const workspace = await createWorkspace(db.database.db, 'Cached');
    const heldCtx = { database: second, config: held };
    expect((await getWorkspaceCached(heldCtx, workspace.id))?.deactivatedAt).toBeNull();

    await setWorkspaceDeactivated(db.database.db, workspace.id, new Date());
    // Within the refresh time the other process still holds the old fields...
    expect((await getWorkspaceCached(heldCtx, workspace.id))?.deactivatedAt).toBeNull();
    // ...a process whose entries are older than its refresh rereads them.
    const fresh = { database: db.database, config };
    expect((await getWorkspaceCached(fresh, workspace.id))?.deactivatedAt).toBeInstanceOf(Date);
    expect(await getWorkspaceCached(fresh, 'not-a-uuid')).toBeUndefined();
    expect(await getWorkspaceCached(fresh, '00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });
});
