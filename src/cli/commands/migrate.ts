import { defineCommand } from 'citty';
import { createDatabase } from '../../db/client.js';
import { applyMigrations, coreMigrations, withMigrationLock } from '../../db/migrate.js';
import { createLogger } from '../../log.js';
import { loadPlugins, pluginMigrationSets } from '../../plugin-host/host.js';
import { commandConfig, problemsStoppingPluginCommands, stopOn } from '../config.js';
import { commandDatabase } from '../database.js';

export default defineCommand({
  meta: { name: 'migrate', description: 'Apply the core and plugin migrations, then exit' },
  async run() {
    const loaded = commandConfig();
    const log = createLogger();
    const plugins = await loadPlugins();
    const source = await commandDatabase(loaded);
    const database = createDatabase(source.url, { max: 2 });
    try {
      await withMigrationLock(database, { log }, async () => {
        await applyMigrations(database, coreMigrations, log);
        // SPEC 8.2: a refused plugin-facing value stops migrate after the core's migrations.
        stopOn(problemsStoppingPluginCommands(loaded.problems));
        for (const set of pluginMigrationSets(plugins)) await applyMigrations(database, set, log);
      });
      console.log('migrations are current');
    } finally {
      await database.close();
      await source.release();
    }
  },
});
