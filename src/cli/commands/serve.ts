import { defineCommand } from 'citty';
import { createLogger } from '../../log.js';
import { startService } from '../../server.js';
import { requireDatabaseUrl } from '../../config/database-url.js';
import { serveConfig } from '../config.js';
import { untilSignal } from '../signals.js';

export default defineCommand({
  meta: {
    name: 'serve',
    description:
      'Apply migrations and serve the API, on the database SVC_DATABASE_URL names (required; never the embedded one)',
  },
  async run() {
    // Listening from the start: a SIGTERM during start-up still stops the service cleanly.
    const signalled = untilSignal();
    const config = serveConfig();
    const log = createLogger({ level: config.server.logLevel });
    const service = await startService({ config, log, databaseUrl: requireDatabaseUrl(config) });
    await signalled;
    await service.shutdown();
  },
});
