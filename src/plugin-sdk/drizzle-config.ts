import path from 'node:path';

/**
 * drizzle-kit settings for a plugin's own tables: `plugins/<id>/tables.ts` generates into
 * `plugins/<id>/drizzle/`, recorded in its own migrations table at run time.
 */
export function pluginDrizzleConfig(folder: string) {
  return {
    dialect: 'postgresql' as const,
    schema: path.join(folder, 'tables.ts'),
    out: path.join(folder, 'drizzle'),
    casing: 'snake_case' as const,
  };
}
