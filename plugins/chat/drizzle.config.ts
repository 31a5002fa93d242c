import { defineConfig } from 'drizzle-kit';
import { pluginDrizzleConfig } from '../../src/plugin-sdk/drizzle-config.js';

export default defineConfig(pluginDrizzleConfig('plugins/chat'));
