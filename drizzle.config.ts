import { defineConfig } from 'drizzle-kit';

// The core's tables: every domain folder's tables.ts. Plugins keep their own tables and
// migrations (plugins/<id>/drizzle.config.ts), applied under the same lock.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/*/tables.ts',
  out: './drizzle',
  casing: 'snake_case',
});
