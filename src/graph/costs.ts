/**
 * What the database (or the CPU) pays for a field's own work, in the complexity model's
 * points (SPEC 8.1's 2500 per operation; a row's leaf costs 1). docs/complexity.md has
 * the table of every field and the figures these were set from.
 */

/** One statement along an index: a primary-key read, a page walk, a stored counter. */
export const STATEMENT = 5;

/** A write: its transaction, the event it records, the NOTIFY at commit. */
export const WRITE = 20;

/**
 * Erasing one contact: the write, every plugin's erase hook (its conversations, messages
 * and media bytes, field values, import links), the task links and the events it redacts
 * (docs/contacts.md has the measured figures). A merge pays it once per contact it touches.
 */
export const ERASE = 100;

/**
 * A search (`q`): trigram scans of a workspace's names, display names and identifier
 * digits, then the matches read by key. A broad fragment over a million contacts costs
 * tens of milliseconds: two searches with their counts fill an operation.
 */
export const SEARCH = 500;

/**
 * `contactDuplicates`: the contact's match keys along their index, then a trigram scan of
 * the workspace's names at similarity 0.6 (10-30 ms over a million contacts), as dear as
 * a search.
 */
export const DUPLICATES = SEARCH;

/** Counting every match of a filter: the filter run to its end, as costly as a search. */
export const FILTER_COUNT = 500;

/** A page walked through an indexed filter (a channel, a custom field's value): a semi-join per contact walked. */
export const INDEXED_FILTER = 50;

/** A page walked through a channel filter. */
export const CHANNEL_FILTER = INDEXED_FILTER;

/** A password hashed or checked: argon2id's ~8 ms of CPU. */
export const PASSWORD = 200;

/** A root field that declares no cost pays what its kind of operation usually runs. */
export const ROOT_COSTS = { query: STATEMENT, mutation: WRITE, subscription: 0 } as const;

/** Whether a page's arguments filter it (a search or a channel list). */
export function filtered(args: { q?: unknown; channels?: unknown }): boolean {
  const q = typeof args.q === 'string' ? args.q.trim() : '';
  return q !== '' || (Array.isArray(args.channels) && args.channels.length > 0);
}

/** A search's cost, or nothing when `q` is blank (a blank search is no search). */
export function searchCost(args: { q?: unknown }): number {
  return typeof args.q === 'string' && args.q.trim() !== '' ? SEARCH : 0;
}
