import {
  and,
  asc,
  desc,
  eq,
  getTableColumns,
  inArray,
  or,
  sql,
  type Placeholder,
  type SQL,
} from 'drizzle-orm';
import { alias, type AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { jsonRows, type JsonRows } from '../db/json-rows.js';
import { anyUuid, prepared, preparedFamily } from '../db/prepared.js';
import type { NormalisedIdentity } from './channels.js';
import {
  contactIdentities,
  contactSearch,
  contacts,
  identityMatchKey,
  workspaceCounts,
  type Contact,
  type ContactIdentity,
} from './tables.js';

/** What `contacts` and `contactPage` narrow by. */
export interface ContactFilter {
  /** A name fragment, identity display name fragment or (3+ digits) identifier digits. */
  q?: string | null;
  /** Channel names, already normalised; empty or absent: no narrowing. */
  channels?: readonly string[] | null;
  /** Conditions of plugins' filters (src/contacts/filters.ts), already built. */
  conditions?: readonly SQL[];
}

export type ContactOrder = 'NAME' | 'CREATED_AT';
export type SortOrder = 'ASC' | 'DESC';

const lowerName = sql<string>`lower(${contacts.name})`;

/** `%fragment%` for LIKE, with the caller's `%`, `_` and `\` taken literally. */
function containing(fragment: string): string {
  return `%${fragment.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * What `q` matches in contact_search: the name, a display name, or (3+ digits) the digits
 * of an identifier. A fragment of three characters or more is a LIKE the trigram index
 * answers; a shorter one has no trigram to look up, so it is spelled as `strpos`, which no
 * plan (a generic one included) tries the index for. A fragment holding a line break would
 * cross from one display name into the next in `names`: it reads the identities instead.
 */
function searchMatch(workspaceId: string, q: string): SQL {
  const terms = searchTerms(q);
  if (terms.shape) return searchCondition(terms.shape, terms);
  const lowered = q.toLowerCase();
  const tests = [
    holds(contactSearch.sortName, lowered),
    sql`exists (select from ${contactIdentities}
      where ${contactIdentities.workspaceId} = ${workspaceId}
        and ${contactIdentities.contactId} = ${contactSearch.contactId}
        and ${holds(sql`lower(${contactIdentities.displayName})`, lowered)})`,
  ];
  if (terms.digits !== null) tests.push(sql`${contactSearch.digits} like ${terms.digits}`);
  return sql`(${or(...tests)})`;
}

/** A fragment's test of one text, for its value (see {@link searchMatch}). */
function holds(column: SQL | AnyPgColumn, fragment: string): SQL {
  return fragment.length >= 3
    ? sql`${column} like ${containing(fragment)}`
    : sql`strpos(${column}, ${fragment}) > 0`;
}

/** How a search statement tests its fragment (LIKE or strpos) and whether digits too. */
type SearchShape = `${'like' | 'strpos'}-${'digits' | 'names'}`;

/**
 * `q` as the values a search statement takes: `names` the pattern (or, under three
 * characters, the fragment) tested against the name and display names, `digits` the LIKE
 * pattern of its digits when it holds three or more. No shape for a fragment with a line
 * break: it would cross from one display name into the next in `names`.
 */
function searchTerms(q: string): {
  shape: SearchShape | null;
  names: string;
  digits: string | null;
} {
  const lowered = q.toLowerCase();
  const digits = q.replace(/\D/g, '');
  const long = lowered.length >= 3;
  return {
    shape: lowered.includes('\n')
      ? null
      : `${long ? 'like' : 'strpos'}-${digits.length >= 3 ? 'digits' : 'names'}`,
    names: long ? containing(lowered) : lowered,
    digits: digits.length >= 3 ? containing(digits) : null,
  };
}

/** The test of a shape, on the given values or on placeholders named as the values are. */
function searchCondition(
  shape: SearchShape,
  values?: { names: string; digits: string | null },
): SQL {
  const [kind, digits] = shape.split('-');
  const names = values ? values.names : sql.placeholder('names');
  const holding = (column: AnyPgColumn) =>
    kind === 'like' ? sql`${column} like ${names}` : sql`strpos(${column}, ${names}) > 0`;
  const tests = [holding(contactSearch.sortName), holding(contactSearch.names)];
  if (digits === 'digits') {
    tests.push(
      sql`${contactSearch.digits} like ${values ? values.digits : sql.placeholder('digits')}`,
    );
  }
  return sql`(${or(...tests)})`;
}

/** The workspace's contact_search rows `q` matches. */
function searchWhere(workspaceId: string, q: string): SQL | undefined {
  return and(eq(contactSearch.workspaceId, workspaceId), searchMatch(workspaceId, q));
}

/**
 * The ids `q` matches, read from contact_search alone (its trigram index, then its narrow
 * rows), for filters that combine `q` with others or order by creation.
 */
function matchingIds(workspaceId: string, q: string): SQL {
  return sql`select ${contactSearch.contactId} from ${contactSearch}
    where ${searchWhere(workspaceId, q)}`;
}

/** The filter as one condition on `contacts`. */
export function filterCondition(workspaceId: string, filter: ContactFilter): SQL | undefined {
  const conditions: SQL[] = [];
  const q = filter.q?.trim();
  // `= any(array(…))` makes the outer read primary-key lookups of just the matches; an
  // `in (subquery)` is planned as a hash join over every contact of the workspace.
  if (q) conditions.push(sql`${contacts.id} = any(array(${matchingIds(workspaceId, q)}))`);
  if (filter.channels && filter.channels.length > 0) {
    conditions.push(
      inArray(
        contacts.id,
        identityContacts(workspaceId, inArray(contactIdentities.channel, [...filter.channels])),
      ),
    );
  }
  conditions.push(...(filter.conditions ?? []));
  return conditions.length > 0 ? and(...conditions) : undefined;
}

/** `(select contact_id from contact_identities where …)` of the workspace. */
function identityContacts(workspaceId: string, condition: SQL): SQL {
  return sql`(select ${contactIdentities.contactId} from ${contactIdentities} where ${and(
    eq(contactIdentities.workspaceId, workspaceId),
    condition,
  )})`;
}

export function isFiltered(filter: ContactFilter): boolean {
  return (
    Boolean(filter.q?.trim()) ||
    Boolean(filter.channels && filter.channels.length > 0) ||
    Boolean(filter.conditions && filter.conditions.length > 0)
  );
}

/** A contact with the key it sorts by (PostgreSQL's `lower`, so cursors match its order). */
export type SortedContact = Contact & { sortName: string };

/** Contacts by name A–Z then id, after a keyset position; `limit` rows at most. */
export function selectContactsByName(
  db: Db,
  workspaceId: string,
  filter: ContactFilter,
  after: { sortName: string; id: string } | null,
  limit: number,
): Promise<SortedContact[]> {
  if (!isFiltered(filter)) {
    const values = { workspaceId, sortName: after?.sortName, id: after?.id, limit };
    return contactsByName(db, after ? 'after' : 'first', values);
  }
  const q = searchOnly(filter);
  if (q) return searchByName(db, workspaceId, q, after, limit);
  // A row comparison is one range on contacts_name_idx; the same test spelled with OR
  // reads every row before the position.
  const position = after
    ? sql`(${lowerName}, ${contacts.id}) > (${after.sortName}, ${after.id})`
    : undefined;
  return db
    .select({ ...contactColumns, sortName: lowerName })
    .from(contacts)
    .where(
      and(eq(contacts.workspaceId, workspaceId), filterCondition(workspaceId, filter), position),
    )
    .orderBy(asc(lowerName), asc(contacts.id))
    .limit(limit);
}

/**
 * The keyset walk of a search (`contacts(q:)`): as a search's page, the matches after the
 * position sorted in contact_search, and only the page's contacts read.
 */
function searchByName(
  db: Db,
  workspaceId: string,
  q: string,
  after: { sortName: string; id: string } | null,
  limit: number,
): Promise<SortedContact[]> {
  const position = after
    ? sql`(${contactSearch.sortName}, ${contactSearch.contactId}) > (${after.sortName}, ${after.id})`
    : undefined;
  const matched = db
    .select({ contactId: contactSearch.contactId, sortName: contactSearch.sortName })
    .from(contactSearch)
    .where(and(searchWhere(workspaceId, q), position))
    .orderBy(asc(contactSearch.sortName), asc(contactSearch.contactId))
    .limit(limit)
    .as('matched');
  return db
    .select({ ...contactColumns, sortName: matched.sortName })
    .from(matched)
    .innerJoin(
      contacts,
      and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, matched.contactId)),
    )
    .orderBy(asc(matched.sortName), asc(matched.contactId));
}

/** The unfiltered walk by name, the common case, built once per shape. */
const contactsByName = preparedFamily('svc_contacts_by_name', (db, shape: 'first' | 'after') =>
  db
    .select({ ...contactColumns, sortName: lowerName })
    .from(contacts)
    .where(
      and(
        eq(contacts.workspaceId, sql.placeholder('workspaceId')),
        shape === 'after'
          ? sql`(${lowerName}, ${contacts.id}) > (${sql.placeholder('sortName')}, ${sql.placeholder('id')})`
          : undefined,
      ),
    )
    .orderBy(asc(lowerName), asc(contacts.id))
    .limit(sql.placeholder('limit')),
);

const contactColumns = {
  workspaceId: contacts.workspaceId,
  id: contacts.id,
  name: contacts.name,
  createdAt: contacts.createdAt,
  updatedAt: contacts.updatedAt,
};

/**
 * A page's contacts without their timestamps, when the operation asks for neither: a
 * contact missing them reads them by id if a field does ask (`stored` in graph.ts).
 */
const untimedContactColumns = {
  workspaceId: contacts.workspaceId,
  id: contacts.id,
  name: contacts.name,
};

// Typed as the whole contact, as a plugin's contact is: `stored` reads what one lacks.
const pageColumns = (timestamps: boolean) =>
  (timestamps ? contactColumns : untimedContactColumns) as typeof contactColumns;

/**
 * What a contact's reads carry of its identities: the fields the graph shows
 * (`ContactIdentity`). The workspace and contact are the parent's, and the search keys
 * are for SQL; leaving them out halves the JSON PostgreSQL builds and Node parses for a
 * page of contacts with their identities.
 */
const identityViewColumns = {
  id: contactIdentities.id,
  channel: contactIdentities.channel,
  identifier: contactIdentities.identifier,
  displayName: contactIdentities.displayName,
  createdAt: contactIdentities.createdAt,
};

/** An identity as the graph shows it (and as a contact's reads carry it). */
export type IdentityView = Pick<ContactIdentity, keyof typeof identityViewColumns>;

/**
 * How much of its identities a contact's read carries: `all` the graph shows, or, when
 * the operation asks nothing of any identity but these (src/graph/selection.ts
 * `fieldsAskedOf`), `brief`: channel and identifier. A page's identities then cost
 * PostgreSQL a third less (no timestamps to write as text), and Node no Dates.
 */
export type IdentityFields = 'all' | 'brief';

const briefIdentityColumns = {
  channel: contactIdentities.channel,
  identifier: contactIdentities.identifier,
};

/** The fields of the `brief` read. */
export const BRIEF_IDENTITY_FIELDS: ReadonlySet<string> = new Set(
  Object.keys(briefIdentityColumns),
);

// A brief row is typed as the view but holds only the brief fields; no field of the
// operation reads the others (IdentityFields).
const identityRows = {
  all: jsonRows<IdentityView>(identityViewColumns),
  brief: jsonRows<IdentityView>(briefIdentityColumns),
};

/**
 * A contact's identities, oldest first, as one JSON column of the contact's row: a contact
 * and its identities in one statement (each row's own read of contact_identities_contact_idx).
 * The outer row is named in full: Drizzle leaves a one-table select's columns unqualified,
 * and inside the subquery those would name the identity's own.
 */
const identitiesColumn = (
  fields: IdentityFields,
) => sql<unknown>`coalesce((select json_agg(${identityRows[fields].row}
    order by ${contactIdentities.createdAt}, ${contactIdentities.id})
  from ${contactIdentities}
  where ${contactIdentities.workspaceId} = "contacts"."workspace_id"
    and ${contactIdentities.contactId} = "contacts"."id"), '[]'::json)`;

/** A contact and its identities, read together. */
export type ContactWithIdentities = Contact & { identities: IdentityView[] };

/** The row with its identities as the domain's objects (set in place: the row is this read's). */
function withIdentities<T extends Contact>(
  row: T & { identities: unknown },
  fields: IdentityFields,
): T & ContactWithIdentities {
  row.identities = identityRows[fields].revive(row.identities);
  return row as T & ContactWithIdentities;
}

export interface PageRequest {
  orderBy: ContactOrder;
  order: SortOrder;
  limit: number;
  offset: number;
}

export interface PageRead {
  /** Each contact's identities, read in the page's statement. */
  identities?: IdentityFields | null;
  /**
   * The page's total: unfiltered, the workspace's stored contact count; filtered, the
   * count of every match (see {@link selectContactPage}).
   */
  total?: boolean;
  /** The contacts' created and updated times. @default true */
  timestamps?: boolean;
}

/**
 * One offset page of contacts in the asked order; id breaks ties in the same direction.
 * With `total`, the total of every match: a column of the page's rows where that costs
 * nothing (read alone when the page is empty), else a count beside the page.
 */
export async function selectContactPage(
  db: Db,
  workspaceId: string,
  filter: ContactFilter,
  page: PageRequest,
  read: PageRead = {},
): Promise<{ items: (Contact | ContactWithIdentities)[]; total: number | null }> {
  const filtered = isFiltered(filter);
  const timestamps = read.timestamps !== false;
  // Where the total rides in the page's statement: the stored count unfiltered; the
  // window count when a search already makes PostgreSQL read every match. Other filters
  // may let the page stop at its last row: those count in a statement of their own.
  const inPage = !read.total
    ? null
    : !filtered
      ? 'stored'
      : readsEveryMatch(filter)
        ? 'window'
        : null;
  const [rows, counted]: [
    (Contact & { identities?: unknown; total?: number | null })[],
    number | null,
  ] = await Promise.all([
    filtered
      ? filteredPage(db, workspaceId, filter, page, {
          identities: read.identities ?? null,
          timestamps,
          counted: inPage === 'window',
        })
      : contactPage(
          db,
          `${page.orderBy}-${page.order}-${read.identities ?? 'plain'}-${
            inPage ? 'counted' : 'uncounted'
          }-${timestamps ? 'timed' : 'untimed'}`,
          { workspaceId, limit: page.limit, offset: page.offset },
        ),
    read.total && !inPage ? countMatchingContacts(db, workspaceId, filter) : null,
  ]);
  let total: number | null = counted;
  if (inPage && rows[0]) total = rows[0].total ?? 0;
  else if (inPage === 'stored') total = await storedContactCount(db, workspaceId);
  // A search with no match at all, or a page past its last match.
  else if (inPage === 'window') {
    total = page.offset === 0 ? 0 : await countMatchingContacts(db, workspaceId, filter);
  }
  const fields = read.identities;
  const finish = (row: Contact & { identities?: unknown }) =>
    fields ? withIdentities(row as Contact & { identities: unknown }, fields) : row;
  const items = inPage ? rows.map(({ total: _total, ...row }) => finish(row)) : rows.map(finish);
  return { items, total };
}

/**
 * Whether a filtered page reads every match whatever its size: a search (`q`) is the set
 * of its matches (`= any(array(…))`), all read and sorted for the page. A channel or a
 * plugin's condition alone may let PostgreSQL walk the sort order and stop at the page's
 * last row, where counting every match in the same statement would read them all.
 */
function readsEveryMatch(filter: ContactFilter): boolean {
  return Boolean(filter.q?.trim());
}

/**
 * The count of every match as a column of a search's page: PostgreSQL reads every match
 * to sort them anyway, so counting them there costs next to nothing, where a count of its
 * own would find them all again (about 40% of a broad search's time).
 */
const matchesColumn = sql<number>`(count(*) over ())::int`;

/** `q` alone, the search box: a page of it by name reads contact_search until its rows. */
function searchOnly(filter: ContactFilter): string | null {
  const q = filter.q?.trim();
  if (!q || (filter.channels && filter.channels.length > 0) || filter.conditions?.length) {
    return null;
  }
  return q;
}

type PageReadOf = { identities: IdentityFields | null; timestamps: boolean; counted: boolean };

/**
 * A search's page by name: the matches' narrow rows sorted (`sort_name` is `lower(name)`,
 * so the order is the unfiltered page's) and counted in one pass over contact_search, and
 * only the page's contacts read from contacts. Reading every match's contact row to sort
 * it was most of a broad search's time (docs/performance.md, "Instant search"). Built once
 * per shape, the patterns as values: Drizzle building the statement and mapping its rows
 * on every keystroke was 1–2 ms of the service's CPU a search (docs/performance.md,
 * "second pass"). A fragment holding a line break (no shape) is built as the rare
 * statement it is.
 */
function searchPage(db: Db, workspaceId: string, q: string, page: PageRequest, read: PageReadOf) {
  const terms = searchTerms(q);
  if (!terms.shape) return searchPageBuilt(db, workspaceId, q, page, read);
  const shape: SearchPageShape = `${page.order}-${read.identities ?? 'plain'}-${
    read.counted ? 'counted' : 'uncounted'
  }-${read.timestamps ? 'timed' : 'untimed'}-${terms.shape}`;
  return searchPageFamily(db, shape, {
    workspaceId,
    names: terms.names,
    digits: terms.digits,
    limit: page.limit,
    offset: page.offset,
  });
}

type SearchPageShape = `${SortOrder}-${IdentityFields | 'plain'}-${'counted' | 'uncounted'}-${
  'timed' | 'untimed'}-${SearchShape}`;

const searchPageFamily = preparedFamily('svc_contact_search_page', (db, shape: SearchPageShape) => {
  const [order, identities, counted, timed, names, digits] = shape.split('-');
  return searchPageOf(
    db,
    sql.placeholder('workspaceId'),
    searchCondition(`${names}-${digits}` as SearchShape),
    {
      order: order as SortOrder,
      limit: sql.placeholder('limit'),
      offset: sql.placeholder('offset'),
    },
    {
      identities: identities === 'plain' ? null : (identities as IdentityFields),
      counted: counted === 'counted',
      timestamps: timed === 'timed',
    },
  );
});

/** {@link searchPage} of a fragment no shape covers, built for its values. */
function searchPageBuilt(
  db: Db,
  workspaceId: string,
  q: string,
  page: PageRequest,
  read: PageReadOf,
) {
  return searchPageOf(db, workspaceId, searchMatch(workspaceId, q), page, read);
}

/** The statement of {@link searchPage}, for values or for placeholders. */
function searchPageOf(
  db: Db,
  workspaceId: string | Placeholder,
  matches: SQL,
  page: { order: SortOrder; limit: number | Placeholder; offset: number | Placeholder },
  read: PageReadOf,
) {
  const direction = page.order === 'DESC' ? desc : asc;
  const matched = db
    .select({
      contactId: contactSearch.contactId,
      sortName: contactSearch.sortName,
      ...(read.counted ? { total: sql<number>`(count(*) over ())::int`.as('total') } : {}),
    })
    .from(contactSearch)
    .where(and(eq(contactSearch.workspaceId, workspaceId), matches))
    .orderBy(direction(contactSearch.sortName), direction(contactSearch.contactId))
    .limit(page.limit as number)
    .offset(page.offset as number)
    .as('matched');
  return db
    .select({
      ...pageColumns(read.timestamps),
      ...(read.identities ? { identities: identitiesColumn(read.identities) } : {}),
      ...(read.counted ? { total: sql<number>`${sql.identifier('matched')}.total` } : {}),
    })
    .from(matched)
    .innerJoin(
      contacts,
      and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, matched.contactId)),
    )
    .orderBy(direction(matched.sortName), direction(matched.contactId));
}

function filteredPage(
  db: Db,
  workspaceId: string,
  filter: ContactFilter,
  page: PageRequest,
  read: PageReadOf,
) {
  const q = searchOnly(filter);
  if (q && page.orderBy === 'NAME') return searchPage(db, workspaceId, q, page, read);
  const direction = page.order === 'DESC' ? desc : asc;
  const key = page.orderBy === 'CREATED_AT' ? contacts.createdAt : lowerName;
  return db
    .select({
      ...pageColumns(read.timestamps),
      ...(read.identities ? { identities: identitiesColumn(read.identities) } : {}),
      ...(read.counted ? { total: matchesColumn } : {}),
    })
    .from(contacts)
    .where(and(eq(contacts.workspaceId, workspaceId), filterCondition(workspaceId, filter)))
    .orderBy(direction(key), direction(contacts.id))
    .limit(page.limit)
    .offset(page.offset);
}

/**
 * The stored count as a column of a page's rows. It names the workspace by its placeholder,
 * not the outer row's column, so PostgreSQL reads it once per statement, not once a row.
 */
const storedTotalColumn = sql<number | null>`(select ${workspaceCounts.contacts}
  from ${workspaceCounts}
  where ${workspaceCounts.workspaceId} = ${sql.placeholder('workspaceId')})`;

type PageShape = `${ContactOrder}-${SortOrder}-${IdentityFields | 'plain'}-${
  'counted' | 'uncounted'}-${'timed' | 'untimed'}`;

/** An unfiltered page (the list a workspace opens on), built once per order. */
const contactPage = preparedFamily('svc_contact_page', (db, shape: PageShape) => {
  const [orderBy, order, identities, counted, timed] = shape.split('-');
  const direction = order === 'DESC' ? desc : asc;
  const key = orderBy === 'CREATED_AT' ? contacts.createdAt : lowerName;
  return db
    .select({
      ...pageColumns(timed === 'timed'),
      ...(identities !== 'plain'
        ? { identities: identitiesColumn(identities as IdentityFields) }
        : {}),
      ...(counted === 'counted' ? { total: storedTotalColumn } : {}),
    })
    .from(contacts)
    .where(eq(contacts.workspaceId, sql.placeholder('workspaceId')))
    .orderBy(direction(key), direction(contacts.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'));
});

/** Every contact matching a filter: a statement of its own, run beside the page walk. */
export async function countMatchingContacts(
  db: Db,
  workspaceId: string,
  filter: ContactFilter,
): Promise<number> {
  const q = searchOnly(filter);
  const [row] = q
    ? await db
        .select({ total: sql<number>`count(*)::int` })
        .from(contactSearch)
        .where(searchWhere(workspaceId, q))
    : await db
        .select({ total: sql<number>`count(*)::int` })
        .from(contacts)
        .where(and(eq(contacts.workspaceId, workspaceId), filterCondition(workspaceId, filter)));
  return row?.total ?? 0;
}

/** The workspace's contact count, kept by every insert and delete (no count of rows). */
export async function storedContactCount(db: Db, workspaceId: string): Promise<number> {
  const [row] = await storedCount(db, { workspaceId });
  return row?.contacts ?? 0;
}

const storedCount = prepared('svc_stored_contact_count', (db) =>
  db
    .select({ contacts: workspaceCounts.contacts })
    .from(workspaceCounts)
    .where(eq(workspaceCounts.workspaceId, sql.placeholder('workspaceId'))),
);

/** Adds `delta` to the workspace's contact count, in the caller's transaction. */
export async function bumpContactCount(db: Db, workspaceId: string, delta: number): Promise<void> {
  await db
    .insert(workspaceCounts)
    .values({ workspaceId, contacts: delta })
    .onConflictDoUpdate({
      target: workspaceCounts.workspaceId,
      set: { contacts: sql`${workspaceCounts.contacts} + ${delta}` },
    });
}

export async function findContact(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<Contact | undefined> {
  const [row] = await contactById(db, { workspaceId, id });
  return row;
}

/** A column another domain's field adds to a contact's row (src/graph/read-ahead.ts). */
export interface ContactColumn {
  /** The row's property holding it. */
  name: string;
  /** Its part of the statement's shape. @default name */
  shape?: string;
  column: SQL;
}

/** What a contact's statement reads besides the contact. */
export interface ContactRead {
  identities: IdentityFields | null;
  /**
   * Read the contact's created and updated times (the operation asks one); a contact
   * without them has them read by id if a field asks after all (`stored`). @default true
   */
  timestamps?: boolean;
  columns: readonly ContactColumn[];
  /** The columns' placeholders. */
  values: Record<string, unknown>;
}

/** A contact as {@link findContactReading} reads it. */
export type ContactReadRow = Contact & { identities?: IdentityView[] } & Record<string, unknown>;

/**
 * A contact with, in the same statement, its identities and other domains' columns (each
 * the row's property of its name); undefined when there is none.
 */
export async function findContactReading(
  db: Db,
  workspaceId: string,
  id: string,
  read: ContactRead,
): Promise<ContactReadRow | undefined> {
  const timed = read.timestamps === false ? 'untimed' : 'timed';
  const shape = [read.identities ?? 'plain', timed, ...read.columns.map((c) => c.shape ?? c.name)];
  const [row] = await contactReading(
    db,
    shape.join('_'),
    { ...read.values, workspaceId, id },
    read.identities,
    read.columns,
  );
  if (!row) return undefined;
  return (
    read.identities
      ? withIdentities(row as Contact & { identities: unknown }, read.identities)
      : row
  ) as ContactReadRow;
}

/** One contact by its key, as placeholders. */
const byKey = () =>
  and(
    eq(contacts.workspaceId, sql.placeholder('workspaceId')),
    eq(contacts.id, sql.placeholder('id')),
  );

const contactReading = preparedFamily(
  'svc_contact_reading',
  (db, shape: string, identities: IdentityFields | null, columns: readonly ContactColumn[]) =>
    db
      .select({
        ...pageColumns(shape.split('_')[1] === 'timed'),
        ...(identities ? { identities: identitiesColumn(identities) } : {}),
        ...Object.fromEntries(columns.map(({ name, column }) => [name, column])),
      })
      .from(contacts)
      .where(byKey()),
);

const contactById = prepared('svc_contact_by_id', (db) =>
  db.select().from(contacts).where(byKey()),
);

/** Whether the workspace holds a contact of this id (other domains check links with it). */
export async function contactExists(db: Db, workspaceId: string, id: string): Promise<boolean> {
  const [row] = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, id)));
  return row !== undefined;
}

/**
 * A contact as a plugin returns it to the graph (`id` and `name`; the core resolves the
 * rest), or undefined when the workspace holds no such contact.
 */
export async function findContactRef(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<{ id: string; name: string } | undefined> {
  const [row] = await db
    .select({ id: contacts.id, name: contacts.name })
    .from(contacts)
    .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, id)));
  return row;
}

/** Contacts by id, in one read; absent ids are left out. */
export function selectContacts(
  db: Db,
  workspaceId: string,
  ids: readonly string[],
): Promise<Contact[]> {
  return contactsByIds(db, { workspaceId, ids: [...ids] });
}

/** Built once: the ids come as one array parameter, whatever their number. */
const contactsByIds = prepared('svc_contacts_by_ids', (db) =>
  db
    .select()
    .from(contacts)
    .where(
      and(eq(contacts.workspaceId, sql.placeholder('workspaceId')), anyUuid(contacts.id, 'ids')),
    ),
);

export async function insertContact(db: Db, workspaceId: string, name: string): Promise<Contact> {
  const [row] = await db.insert(contacts).values({ workspaceId, name }).returning();
  return row as Contact;
}

/** Sets `updatedAt` (and the name when given) and answers the row; undefined: no contact. */
export async function touchContact(
  db: Db,
  workspaceId: string,
  id: string,
  name?: string,
): Promise<Contact | undefined> {
  const [row] = await db
    .update(contacts)
    .set({ updatedAt: sql`now()`, ...(name === undefined ? {} : { name }) })
    .where(and(eq(contacts.workspaceId, workspaceId), eq(contacts.id, id)))
    .returning();
  return row;
}

/**
 * Inserts an identity unless its (channel, key) is held: then answers undefined. ON
 * CONFLICT waits for a racing insert to commit or roll back, so the loser of a race sees
 * the winner's row rather than a unique violation.
 */
export async function insertIdentity(
  db: Db,
  workspaceId: string,
  contactId: string,
  identity: NormalisedIdentity,
): Promise<ContactIdentity | undefined> {
  const [row] = await db
    .insert(contactIdentities)
    // clock_timestamp, not the transaction's now(): identities written together keep
    // the order they were given in, which is the order they are listed in.
    .values({ workspaceId, contactId, ...identity, createdAt: sql`clock_timestamp()` })
    .onConflictDoNothing({
      target: [
        contactIdentities.workspaceId,
        contactIdentities.channel,
        contactIdentities.identifierKey,
      ],
    })
    .returning();
  return row;
}

export async function findIdentityByKey(
  db: Db,
  workspaceId: string,
  channel: string,
  identifierKey: string,
): Promise<ContactIdentity | undefined> {
  const [row] = await db
    .select()
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, workspaceId),
        eq(contactIdentities.channel, channel),
        eq(contactIdentities.identifierKey, identifierKey),
      ),
    );
  return row;
}

export async function deleteIdentity(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<ContactIdentity | undefined> {
  const [row] = await db
    .delete(contactIdentities)
    .where(and(eq(contactIdentities.workspaceId, workspaceId), eq(contactIdentities.id, id)))
    .returning();
  return row;
}

/** How many identities a contact holds. */
export async function countIdentitiesOf(
  db: Db,
  workspaceId: string,
  contactId: string,
): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, workspaceId),
        eq(contactIdentities.contactId, contactId),
      ),
    );
  return row?.n ?? 0;
}

/** The identities of many contacts in one read, oldest first within each contact. */
export function selectIdentitiesOf(
  db: Db,
  workspaceId: string,
  contactIds: readonly string[],
): Promise<(IdentityView & { contactId: string })[]> {
  return identitiesOf(db, { workspaceId, contactIds: [...contactIds] });
}

/** Built once: the contacts come as one array parameter, whatever their number. */
const identitiesOf = prepared('svc_identities_of', (db) =>
  db
    .select({ contactId: contactIdentities.contactId, ...identityViewColumns })
    .from(contactIdentities)
    .where(
      and(
        eq(contactIdentities.workspaceId, sql.placeholder('workspaceId')),
        anyUuid(contactIdentities.contactId, 'contactIds'),
      ),
    )
    .orderBy(asc(contactIdentities.createdAt), asc(contactIdentities.id)),
);

// ---------------------------------------------------------------------------- duplicates

/** The trigram similarity of two lower-cased names at which a name counts as a signal. */
export const NAME_SIMILARITY = 0.6;
/** Holders of one shared match key weighed at most (an address every contact shares is no lead). */
const HOLDERS_PER_KEY = 50;
/** The most similar names weighed at most. */
const NAME_CANDIDATES = 100;

/** A contact that looks like the same person as another, and why (docs/contacts.md). */
export interface DuplicateRow {
  contact: Contact;
  /** Shares an address (lower-cased, `+tag` dropped) on any channel. */
  address: boolean;
  /** Shares a number's last 9 digits on any channel. */
  phone: boolean;
  /** Trigram similarity of the lower-cased names, 0 to 1. */
  similarity: number;
  /** 1 − (1 − 0.9·address)(1 − 0.8·phone)(1 − 0.7·similarity≥0.6), 0 to 0.994. */
  score: number;
}

const mine = alias(contactIdentities, 'mine');
const other = alias(contactIdentities, 'other');
const near = alias(contacts, 'near');
const candidate = alias(contacts, 'candidate');

/**
 * The contact's duplicates, best first, in one statement: its match keys (`me`), the
 * other holders of each along contact_identities_match_idx (`shared`), the names the
 * trigram index finds at least {@link NAME_SIMILARITY} alike (`named`), each candidate
 * scored once. Every branch is an index lookup whatever the statistics say: the keys and
 * the name come from the contact's row, so each lookup is a nested loop's inner scan.
 * The name scan keeps its workspace test outside an `offset 0` fence: without statistics
 * (a bulk load, autovacuum off) PostgreSQL took `workspace_id = $1` for selective and
 * ANDed the trigram bitmap with a million-row bitmap of the workspace (600 ms, not 20).
 * The `limit 1`s tell a planner without statistics that a key names one row: it took the
 * contact's key for 25 rows, multiplied every branch by it, and the plan's cost passed
 * jit_above_cost, a second of JIT compiling on every run.
 *
 * `%` reads its threshold from pg_trgm.similarity_threshold; the statement sets it
 * (`set_config(…, true)`: until the end of this statement's transaction) in the row the
 * name comes from, and the name depends on the call, so no `%` runs before it is set.
 * One row with `self` and null candidate columns: the contact has no duplicate; no row:
 * there is no such contact here.
 */
const duplicatesOf = prepared('svc_contact_duplicates', (db) => {
  const ws = sql.placeholder('workspaceId');
  const myKey = identityMatchKey(mine);
  const otherKey = identityMatchKey(other);
  const address = sql.raw('0.9');
  const phone = sql.raw('0.8');
  const name = sql.raw('0.7');
  const threshold = sql.raw(String(NAME_SIMILARITY));
  const found = sql`(
    with me as materialized (
      select ${contacts.id} as id,
        lower(${contacts.name}) || left(set_config('pg_trgm.similarity_threshold', ${sql.raw(`'${NAME_SIMILARITY}'`)}, true), 0) as name,
        array(select distinct ${myKey} from ${contactIdentities} ${mine}
          where ${mine.workspaceId} = ${ws} and ${mine.contactId} = ${contacts.id}
            and ${myKey} is not null) as keys
      from ${contacts}
      where ${contacts.workspaceId} = ${ws} and ${contacts.id} = ${sql.placeholder('id')}
      limit 1
    ),
    shared as (
      select held.contact_id, k.key like 'tel:%' as phone
      from me cross join unnest(me.keys) as k(key)
      cross join lateral (
        select ${other.contactId} as contact_id from ${contactIdentities} ${other}
        where ${other.workspaceId} = ${ws} and ${otherKey} = k.key and ${other.contactId} <> me.id
        limit ${sql.raw(String(HOLDERS_PER_KEY))}
      ) held
    ),
    named as (
      select contact_id from (
        select ${near.id} as contact_id, ${near.workspaceId} as workspace_id,
          similarity(lower(${near.name}), me.name) as similarity
        from me, ${contacts} ${near}
        where lower(${near.name}) % me.name
        offset 0
      ) as alike
      where alike.workspace_id = ${ws} and alike.contact_id <> (select id from me)
      order by alike.similarity desc, alike.contact_id
      limit ${sql.raw(String(NAME_CANDIDATES))}
    ),
    candidates as (
      select contact_id, coalesce(bool_or(not phone), false) as address,
        coalesce(bool_or(phone), false) as phone
      from (select contact_id, phone from shared
        union all select contact_id, null from named) as leads
      group by contact_id
    )
    select me.id as self, best.* from me left join lateral (
      select one.id, one.name, one.created_at, one.updated_at, c.address, c.phone, s.similarity,
        (1 - (1 - ${address} * c.address::int) * (1 - ${phone} * c.phone::int)
          * (1 - ${name} * case when s.similarity >= ${threshold} then s.similarity else 0 end)
        )::float8 as score
      from candidates c
      cross join lateral (
        select ${candidate.id} as id, ${candidate.name} as name,
          ${candidate.createdAt} as created_at, ${candidate.updatedAt} as updated_at
        from ${contacts} ${candidate}
        where ${candidate.workspaceId} = ${ws} and ${candidate.id} = c.contact_id
        limit 1
      ) one
      cross join lateral (select similarity(lower(one.name), me.name)::float8 as similarity) s
      order by score desc, lower(one.name), one.id
      limit ${sql.placeholder('limit')}
    ) best on true
  ) as found`;
  return db
    .select({
      self: sql<string>`found.self`,
      id: sql<string | null>`found.id`,
      name: sql<string | null>`found.name`,
      createdAt: sql<Date | null>`found.created_at`.mapWith(contacts.createdAt),
      updatedAt: sql<Date | null>`found.updated_at`.mapWith(contacts.updatedAt),
      address: sql<boolean | null>`found.address`,
      phone: sql<boolean | null>`found.phone`,
      similarity: sql<number | null>`found.similarity`,
      score: sql<number | null>`found.score`,
    })
    .from(found);
});

/**
 * Up to `limit` contacts of the workspace that look like the same person as contact `id`,
 * best first (score, then name, then id); undefined when the workspace holds no such
 * contact.
 */
export async function selectDuplicates(
  db: Db,
  workspaceId: string,
  id: string,
  limit: number,
): Promise<DuplicateRow[] | undefined> {
  const rows = await duplicatesOf(db, { workspaceId, id, limit });
  if (rows.length === 0) return undefined;
  return rows.flatMap((row) =>
    row.id === null
      ? []
      : [
          {
            contact: {
              workspaceId,
              id: row.id,
              name: row.name as string,
              createdAt: row.createdAt as Date,
              updatedAt: row.updatedAt as Date,
            },
            address: row.address === true,
            phone: row.phone === true,
            similarity: row.similarity ?? 0,
            score: row.score ?? 0,
          },
        ],
  );
}

const contactRow = jsonRows<Contact>(getTableColumns(contacts));
/** A contact without its timestamps; typed whole, as a page's (`stored` reads them by id). */
const untimedContactRow = jsonRows<Contact>(untimedContactColumns);

/** The contact the outer `tasks` row names, as `rows` carries it (null without one). */
const contactOfTask = (rows: JsonRows<Contact>) =>
  sql<unknown>`(select ${rows.row} from ${contacts}
  where ${contacts.workspaceId} = "tasks"."workspace_id" and ${contacts.id} = "tasks"."contact_id")`;

/**
 * The contact the outer `tasks` row of a statement names, as one JSON column (null for a
 * task without one): a page of tasks and their contacts in one statement (the tasks
 * domain's `Task.contact` reads ahead with it). `Untimed`: without its created and updated
 * times, for an operation that asks neither of any contact.
 */
export const contactOfTaskColumn = contactOfTask(contactRow);
export const untimedContactOfTaskColumn = contactOfTask(untimedContactRow);

/** Either column's value as the contact's row (without times from the untimed one), or null. */
export function contactFromColumn(json: unknown): Contact | null {
  if (!json) return null;
  const rows = (json as unknown[]).length === UNTIMED_WIDTH ? untimedContactRow : contactRow;
  return rows.revive([json])[0] ?? null;
}

/** How many values the untimed column's row has (the whole row has more). */
const UNTIMED_WIDTH = Object.keys(untimedContactColumns).length;
