import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as v from 'valibot';

/** `plugins/<id>/plugin.json` (NOTES.md, "Plugins"). */
export interface PluginManifest {
  id: string;
  name: string;
  /** The plugin's server module, relative to its folder. */
  backend: string | null;
  graphql: boolean;
}

export class PluginManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PluginManifestError';
  }
}

const ManifestSchema = v.object({
  id: v.pipe(v.string(), v.regex(/^[a-z][a-z0-9]*$/, 'id must be lower-case letters and digits')),
  name: v.pipe(v.string(), v.minLength(1, 'name is required')),
  backend: v.optional(v.nullable(v.pipe(v.string(), v.minLength(1))), null),
  graphql: v.optional(v.boolean(), false),
});

export function readManifest(folder: string): PluginManifest {
  const file = path.join(folder, 'plugin.json');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new PluginManifestError(`${file}: ${(error as Error).message}`);
  }
  const parsed = v.safeParse(ManifestSchema, raw);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const key = issue.path?.map((p) => p.key).join('.') ?? '';
    throw new PluginManifestError(`${file}: ${key ? `${key}: ` : ''}${issue.message}`);
  }
  const manifest = parsed.output;
  if (manifest.id !== path.basename(folder)) {
    throw new PluginManifestError(`${file}: id "${manifest.id}" must equal its folder name`);
  }
  if (manifest.graphql && !manifest.backend) {
    throw new PluginManifestError('graphql plugins require a backend');
  }
  if (manifest.backend && !existsSync(path.join(folder, manifest.backend))) {
    throw new PluginManifestError(`${file}: backend ${manifest.backend} does not exist`);
  }
  return manifest;
}

/** Every plugin folder under `dir` (a folder holding plugin.json), in name order. */
export function pluginFolders(dir: string): string[] {
  if (!existsSync(dir)) return [];
  // A folder linked in (an operator's plugin kept elsewhere) counts as one.
  return readdirSync(dir)
    .map((name) => path.join(dir, name))
    .filter((folder) => existsSync(path.join(folder, 'plugin.json')))
    .sort();
}
