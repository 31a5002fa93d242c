import { defineCommand } from 'citty';
import { createLogger } from '../../log.js';
import { startService } from '../../server.js';
import { databaseUrlOf, serveConfig } from '../config.js';
import { untilSignal } from '../signals.js';

export default defineCommand({
  meta: { name: 'serve', description: 'Apply migrations and serve the API' },
  async run() {
    const config = serveConfig();
    const log = createLogger();
    const service = await startService({ config, log, databaseUrl: databaseUrlOf(config) });
    await untilSignal();
    await service.shutdown();
  },
});
