// Contacts read for an export (the importer's `exportContacts`): the filters of
// `contactPage`, compiled outside a graph request, and every match streamed from one
// snapshot through a server-side cursor, a batch at a time, so a million contacts never
// sit in memory at once (docs/contacts.md "Export").
import type { ArgBuilder } from '@pothos/core';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import type { BuilderTypes } from '../graph/builder.js';
import { CHANNEL_FILTER, searchCost } from '../graph/costs.js';
import { limited } from '../graph/input-limits.js';
import { TEXT_MAX } from '../limits.js';
import { channelName, channelNames } from './channels.js';
import { contactFilters, usedFilters, type ContactFilterScope } from './filters.js';
import {
  countMatchingContacts,
  filterCondition,
  isFiltered,
  storedContactCount,
  type ContactFilter,
} from './queries.js';
import { contactIdentities, contacts } from './tables.js';

/** `contactPage`'s filter arguments as given: `q`, `channels` and every plugin's own. */
export interface ContactFilterArgs {
  q?: string | null;
  channels?: readonly string[] | null;
  [argument: string]: unknown;
}

/**
 * The filter arguments of `contactPage` for another field (an export): `q`, `channels`
 * and every plugin's registered filter, with the same caps.
 */
export function contactFilterArguments(t: ArgBuilder<BuilderTypes>) {
  return {
    q: t.string({ required: false, extensions: limited({ maxLength: TEXT_MAX.search }) }),
    channels: t.stringList({
      required: false,
      extensions: limited({ maxLength: TEXT_MAX.word, maxItems: 20 }),
    }),
    ...Object.fromEntries(
      contactFilters().map((filter) => [
        filter.argument,
        t({ type: filter.type, required: false, description: filter.description }),
      ]),
    ),
  };
}

/** What the filters add to a field's cost, as `contactPage` counts them. */
export function contactFilterCost(args: Readonly<Record<string, unknown>>): number {
  return (
    searchCost(args) +
    (Array.isArray(args.channels) && args.channels.length > 0 ? CHANNEL_FILTER : 0) +
    usedFilters(args).reduce((sum, { filter, value }) => sum + filter.cost(value), 0)
  );
}

/** Filters compiled for one workspace, ready to count or read (`prepareContactFilter`). */
export interface PreparedContactFilter {
  readonly workspaceId: string;
  readonly filter: ContactFilter;
}

/**
 * `contactPage`'s filter arguments compiled for `scope`'s workspace: plugins' conditions
 * built, each refusing a value it cannot use as `contactPage` would (a field archived
 * since is `field_unknown`).
 */
export async function prepareContactFilter(
  scope: ContactFilterScope,
  args: ContactFilterArgs,
): Promise<PreparedContactFilter> {
  const conditions = await Promise.all(
    usedFilters(args).map(({ filter, value }) => filter.condition(scope, value)),
  );
  const filter = {
    q: args.q,
    channels: args.channels?.map(channelName).filter(Boolean),
    conditions,
  };
  return { workspaceId: scope.workspaceId, filter };
}

/**
 * How many contacts the filters match: the workspace's stored count when nothing narrows
 * (one row), else a count of every match.
 */
export async function countFilteredContacts(
  db: Db,
  prepared: PreparedContactFilter,
): Promise<number> {
  const { workspaceId, filter } = prepared;
  return isFiltered(filter)
    ? countMatchingContacts(db, workspaceId, filter)
    : storedContactCount(db, workspaceId);
}

/** A contact as an export writes it: its name and identities, oldest first. */
export interface ExportedContact {
  id: string;
  name: string;
  identities: { channel: string; identifier: string }[];
}

/**
 * The channels an export gives a column: every declared one (the core's, then plugins'),
 * then any other the workspace's identities use (a plugin since removed), A to Z. A loose
 * index scan of `contact_identities_channel_idx`: one probe per distinct channel.
 */
export async function exportChannels(db: Db, workspaceId: string): Promise<string[]> {
  const rows = (await db.execute(sql`
    with recursive used(channel) as (
      (select channel from contact_identities where workspace_id = ${workspaceId}
        order by channel limit 1)
      union all
      select (select i.channel from contact_identities i
        where i.workspace_id = ${workspaceId} and i.channel > used.channel
        order by i.channel limit 1)
      from used where used.channel is not null)
    select channel from used where channel is not null`)) as unknown as { channel: string }[];
  const declared = channelNames();
  const others = rows.map((row) => row.channel).filter((channel) => !declared.includes(channel));
  return [...declared, ...others.sort()];
}

const CURSOR = 'svc_contact_export';

/**
 * Streams every contact the filters match, by name A to Z then id, to `each` a batch at
 * a time. One read-only REPEATABLE READ transaction: every batch (and whatever `each`
 * reads through the `tx` it receives, a plugin's values) sees the same snapshot. The
 * query runs once, behind a cursor; each batch is a FETCH, and the next is fetched only
 * once `each` returns, so a slow reader holds the cursor still rather than memory.
 */
export async function readContactsInBatches(
  db: Db,
  prepared: PreparedContactFilter,
  batchSize: number,
  each: (tx: Db, batch: ExportedContact[]) => Promise<void>,
): Promise<void> {
  const { workspaceId, filter } = prepared;
  await db.transaction(
    async (tx) => {
      const identities = sql`coalesce((select json_agg(json_build_array(
          ${contactIdentities.channel}, ${contactIdentities.identifier})
          order by ${contactIdentities.createdAt}, ${contactIdentities.id})
        from ${contactIdentities}
        where ${contactIdentities.workspaceId} = "contacts"."workspace_id"
          and ${contactIdentities.contactId} = "contacts"."id"), '[]'::json)`.as('identities');
      const query = tx
        .select({ id: contacts.id, name: contacts.name, identities })
        .from(contacts)
        .where(and(eq(contacts.workspaceId, workspaceId), filterCondition(workspaceId, filter)))
        .orderBy(asc(sql`lower(${contacts.name})`), asc(contacts.id));
      await tx.execute(sql`declare ${sql.raw(CURSOR)} no scroll cursor for ${query}`);
      for (;;) {
        const rows = (await tx.execute(
          sql`fetch forward ${sql.raw(String(Math.trunc(batchSize)))} from ${sql.raw(CURSOR)}`,
        )) as unknown as { id: string; name: string; identities: [string, string][] }[];
        if (rows.length === 0) break;
        await each(
          tx,
          rows.map((row) => ({
            id: row.id,
            name: row.name,
            identities: row.identities.map(([channel, identifier]) => ({ channel, identifier })),
          })),
        );
        if (rows.length < batchSize) break;
      }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}
