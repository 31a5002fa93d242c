import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ContactDataHooks, ContactDataScope } from '../plugin-host/definition.js';

/**
 * The plugins' `contactData` hooks, by plugin id, in load order: the plugin host registers
 * them as it loads each backend (one set per process, like the schema and the contact
 * filters), and erasing or merging contacts calls every one in the same transaction.
 */
const hooks = new Map<string, ContactDataHooks>();

export function registerContactData(pluginId: string, declared: ContactDataHooks): void {
  hooks.set(pluginId, declared);
}

/** Each registered plugin's `erase`, in load order. */
export async function eraseContactData(
  scope: ContactDataScope,
  contactIds: readonly string[],
): Promise<void> {
  for (const declared of hooks.values()) await declared.erase(scope, contactIds);
}

/** Each registered plugin's `merge`, in load order. */
export async function mergeContactData(
  scope: ContactDataScope,
  move: { targetId: string; sourceIds: readonly string[] },
): Promise<void> {
  for (const declared of hooks.values()) await declared.merge(scope, move);
}

/** The ids of the plugins whose hooks are registered (tests, docs). */
export function contactDataPlugins(): string[] {
  return [...hooks.keys()];
}

/**
 * Whether a plugin's generated migrations reference the core's `contacts` table (a foreign
 * key): such a plugin owns contact data and must declare `contactData`.
 */
export function migrationsReferenceContacts(folder: string): boolean {
  let files: string[];
  try {
    files = readdirSync(folder).filter((name) => name.endsWith('.sql'));
  } catch {
    return false;
  }
  return files.some((name) =>
    /REFERENCES\s+"public"\."contacts"/i.test(readFileSync(path.join(folder, name), 'utf8')),
  );
}
