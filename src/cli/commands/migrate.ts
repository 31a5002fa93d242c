import { defineCommand } from 'citty';
import { createDatabase } from '../../db/client.js';
import { applyMigrations, coreMigrations, withMigrationLock } from '../../db/migrate.js';
import { createLogger } from '../../log.js';
import { loadPlugins, pluginMigrationSets } from '../../plugin-host/host.js';
import { commandConfig, databaseUrlOf, problemsStoppingPluginCommands, stopOn } from '../config.js';

export default defineCommand({
  meta: { name: 'migrate', description: 'Apply the core and plugin migrations, then exit' },
  async run() {
    const { config, problems } = commandConfig();
    const log = createLogger();
    const plugins = await loadPlugins();
    const database = createDatabase(databaseUrlOf(config), { max: 2 });
    try {
      await withMigrationLock(database, { log }, async () => {
        await applyMigrations(database, coreMigrations, log);
        // SPEC 8.2: a refused plugin-facing value stops migrate after the core's migrations.
        stopOn(problemsStoppingPluginCommands(problems));
        for (const set of pluginMigrationSets(plugins)) await applyMigrations(database, set, log);
      });
      console.log('migrations are current');
    } finally {
      await database.close();
    }
  },
});
