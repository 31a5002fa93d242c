import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { migrationsReferenceContacts, registerContactData } from '../contacts/contact-data.js';
import { registerReason } from '../errors.js';
import { fixSubjectKey } from '../events/subject.js';
import type { MigrationSet } from '../db/migrate.js';
import type { Logger } from '../log.js';
import { startJobRunner, type JobRunner } from '../jobs/runner.js';
import type { PluginDefinition, PluginRuntime } from './definition.js';
import {
  PluginManifestError,
  pluginFolders,
  readManifest,
  type PluginManifest,
} from './manifest.js';

export const stockPluginsDir = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../plugins',
);

export interface LoadedPlugin {
  manifest: PluginManifest;
  folder: string;
  /** Null for a plugin with no backend (a manifest only). */
  definition: PluginDefinition | null;
  migrations: MigrationSet | null;
}

export interface LoadOptions {
  /** @default the repository's plugins/ folder */
  dir?: string;
  /** Load only these ids (tests, schema slices). @default every plugin in dir */
  only?: readonly string[];
}

/**
 * Reads every manifest, then imports each backend. Importing registers the plugin's graph
 * types on the one builder, so this runs before the schema is built.
 */
export async function loadPlugins(options: LoadOptions = {}): Promise<LoadedPlugin[]> {
  const folders = pluginFolders(options.dir ?? stockPluginsDir).filter(
    (folder) => !options.only || options.only.includes(path.basename(folder)),
  );
  const manifests = folders.map((folder) => ({ folder, manifest: readManifest(folder) }));
  const loaded: LoadedPlugin[] = [];
  for (const { folder, manifest } of manifests) {
    const definition = manifest.backend ? await importBackend(folder, manifest) : null;
    for (const [name, spec] of Object.entries(definition?.reasons ?? {})) {
      registerReason(name, spec);
    }
    if (definition?.eventSubjectKey) {
      for (const name of definition.events ?? []) fixSubjectKey(name, definition.eventSubjectKey);
    }
    const migrations = migrationSet(folder, manifest.id);
    holdContactData(manifest, definition, migrations);
    loaded.push({ manifest, folder, definition, migrations });
  }
  return loaded;
}

/**
 * Registers the plugin's `contactData` hooks; a plugin whose tables reference contacts
 * without declaring them is refused, so an erased contact never leaves its rows behind
 * (docs/contacts.md).
 */
function holdContactData(
  manifest: PluginManifest,
  definition: PluginDefinition | null,
  migrations: MigrationSet | null,
): void {
  if (definition?.contactData) {
    registerContactData(manifest.id, definition.contactData);
  } else if (migrations && migrationsReferenceContacts(migrations.folder)) {
    throw new PluginManifestError(
      `plugin ${manifest.id}: its tables reference contacts, so it must declare contactData ` +
        '{ erase, merge } (docs/contacts.md)',
    );
  }
}

async function importBackend(folder: string, manifest: PluginManifest): Promise<PluginDefinition> {
  const file = path.join(folder, manifest.backend as string);
  const module = (await import(pathToFileURL(file).href)) as { default?: PluginDefinition };
  const definition = module.default;
  if (!definition || typeof definition !== 'object') {
    throw new PluginManifestError(`${file}: the backend must default-export definePlugin({...})`);
  }
  if (definition.id !== manifest.id) {
    throw new PluginManifestError(
      `${file}: definePlugin id "${definition.id}" differs from the manifest id "${manifest.id}"`,
    );
  }
  return definition;
}

function migrationSet(folder: string, id: string): MigrationSet | null {
  const migrations = path.join(folder, 'drizzle');
  if (!existsSync(path.join(migrations, 'meta', '_journal.json'))) return null;
  return { name: id, folder: migrations, table: `__drizzle_migrations_${id}` };
}

export function pluginMigrationSets(plugins: readonly LoadedPlugin[]): MigrationSet[] {
  return plugins.flatMap((plugin) => (plugin.migrations ? [plugin.migrations] : []));
}

/** The job runners each started plugin's `jobs` run on. */
const runners = new WeakMap<LoadedPlugin, JobRunner[]>();

/** Starts plugins in order; a failure stops the ones already started and rethrows. */
export async function startPlugins(
  plugins: readonly LoadedPlugin[],
  runtime: PluginRuntime,
): Promise<void> {
  const started: LoadedPlugin[] = [];
  try {
    for (const plugin of plugins) {
      const scoped = { ...runtime, log: runtime.log.child({ plugin: plugin.manifest.id }) };
      await plugin.definition?.start?.(scoped);
      started.push(plugin);
      const kinds = plugin.definition?.jobs ?? [];
      if (kinds.length > 0)
        runners.set(
          plugin,
          kinds.map((kind) => startJobRunner(kind, scoped)),
        );
    }
  } catch (error) {
    await stopPlugins(started, 1000, runtime.log);
    throw error;
  }
}

/**
 * Stops plugins in reverse order, all within one grace (SVC_SHUTDOWN_STOP_GRACE); a
 * plugin still stopping when it ends is logged and left behind.
 */
export async function stopPlugins(
  plugins: readonly LoadedPlugin[],
  graceMs: number,
  log: Logger,
): Promise<void> {
  const deadline = Date.now() + graceMs;
  for (const plugin of [...plugins].reverse()) {
    const stop = plugin.definition?.stop;
    const jobs = runners.get(plugin) ?? [];
    runners.delete(plugin);
    if (!stop && jobs.length === 0) continue;
    const left = deadline - Date.now();
    // Its jobs end first: a job may use what the plugin's stop closes.
    const outcome = await settleWithin(
      Promise.all(jobs.map((runner) => runner.stop())).then(() => stop?.call(plugin.definition)),
      left,
    );
    if (outcome === 'timeout') {
      log.warn({ plugin: plugin.manifest.id }, 'plugin did not stop within the stop grace');
    } else if (outcome instanceof Error) {
      log.error({ plugin: plugin.manifest.id, err: outcome }, 'plugin failed to stop');
    }
  }
}

async function settleWithin(
  work: Promise<unknown>,
  ms: number,
): Promise<'done' | 'timeout' | Error> {
  if (ms <= 0) return 'timeout';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  try {
    return await Promise.race([
      work.then(
        () => 'done' as const,
        (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
