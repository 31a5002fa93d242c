/** Events whose subject key a contract fixes (the chat plugin's `conversation_id`). */
const fixedKeys = new Map<string, string>();

/**
 * Fixes the `data` key of an event's subject where a contract names it otherwise than the
 * convention below; the plugin host calls it for a plugin's `eventSubjectKey`.
 */
export function fixSubjectKey(name: string, key: string): void {
  fixedKeys.set(name, key);
}

/**
 * The `data` key carrying an event's subject id: the name's first segment in camelCase
 * plus `Id` (`contact.renamed` → `contactId`, `task.updated` → `taskId`, `note.created` →
 * `noteId`), so a receiver finds the record an event is about without knowing the event.
 */
export function subjectKey(name: string): string {
  const fixed = fixedKeys.get(name);
  if (fixed) return fixed;
  const [segment = ''] = name.split('.');
  return `${segment.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase())}Id`;
}

/**
 * `data` as stored and delivered: the subject's id under `key` first, then the fields the
 * writer gave. A writer naming that key with another id has a bug, so it throws rather
 * than deliver an event about the wrong record.
 */
export function withSubject(
  name: string,
  subjectId: string,
  data: Record<string, unknown> = {},
  key: string = subjectKey(name),
): Record<string, unknown> {
  if (data[key] !== undefined && data[key] !== subjectId) {
    throw new Error(`event ${name}: data.${key} is not its subject ${subjectId}`);
  }
  return { [key]: subjectId, ...data };
}
