/**
 * Everything a plugin may import from the core (lint forbids any other path into src/).
 * See docs/plugins.md.
 */
import type { ObjectRef } from '@pothos/core';
import { ContactObject as CoreContactObject } from '../contacts/graph.js';
import type { BuilderTypes } from '../graph/builder.js';
import type { PluginDefinition } from '../plugin-host/definition.js';

export type {
  ContactDataHooks,
  ContactDataScope,
  HttpMethod,
  PluginDefinition,
  PluginRoute,
  PluginRuntime,
  PluginSweep,
  ReasonDeclaration,
  RouteContext,
} from '../plugin-host/definition.js';
export type { Context, Actor, SignedInContext } from '../context.js';
/** Whether the caller's session or token reaches a scope (a route reading a second area). */
export { callerHolds, type Scope } from '../auth/access.js';
/** The signed-in caller and workspace of a request (`const { workspaceId } = signedIn(ctx)`). */
export { signedIn } from '../context.js';
/**
 * The request's loaders (`ctx.loaders.of(factory)`), and the batching helpers domains build
 * theirs with: `loaderFamily` gives one DataLoader per distinct argument list.
 */
export { loaderFamily, groupByKey, type LoaderFactory, type RequestLoaders } from '../loaders.js';
export type { Config } from '../config.js';
export type { Database, Db } from '../db/client.js';
/** Drizzle over a postgres.js transaction, so a raw `COPY` and Drizzle writes share it. */
export { drizzleOver } from '../db/client.js';
/**
 * Fresh rows of a plugin's own table written with one `COPY … FROM STDIN` in the caller's
 * transaction (the fields plugin's values of contacts an import created): no statement to
 * build, heap pages filled many rows at a time; no `on conflict`.
 */
export { copyRows, type CopyValue } from '../db/copy.js';
export type { Logger } from '../log.js';
export { builder } from '../graph/builder.js';
/** The builder's schema types, for helpers that take a Pothos field builder. */
export type { BuilderTypes } from '../graph/builder.js';
/**
 * The core Contact type: plugins extend it with `extendCoreType` (their fields get `{ id }`
 * only), and a plugin field returning a contact answers `{ id, name }` (`findContactRef`);
 * the core resolves the rest from the id (SPEC 4.5).
 */
export const ContactObject = CoreContactObject as unknown as ObjectRef<
  BuilderTypes,
  { id: string; name: string }
>;
/**
 * Core tables a plugin's own tables may name in a foreign key (`notes` → `contacts`).
 * drizzle-kit writes only the tables a plugin's tables.ts exports, so the constraint lands
 * in the plugin's migration without a copy of the core table. A plugin may read their key
 * columns (does this contact exist in the workspace?); it never writes them, and the rest
 * of a contact reaches it through the graph.
 */
export { contacts } from '../contacts/tables.js';
/**
 * Whether the workspace holds a contact of this id, and the contact as a plugin returns it
 * to the graph (`{ id, name }`), each one indexed read.
 */
export { contactExists, findContactRef } from '../contacts/queries.js';
/**
 * Contacts in bulk (the importer): judged as createContact judges them, checked against
 * the workspace's identities in one read, written in the caller's transaction; the
 * planner's statistics brought up to date once that transaction committed. Identities
 * added to existing contacts in bulk (`addIdentitiesIn`), judged as addContactIdentity
 * judges one, with the counts and the cap (IDENTITIES_PER_CONTACT) a caller judges by
 * before writing; `lockContactsIn` locks contacts judged earlier (refusing
 * `contact_not_found` for one erased since) before writing into them.
 */
export {
  prepareContact,
  identityKey,
  identityHolders,
  isWritableChannel,
  createContactsIn,
  addIdentitiesIn,
  lockContactsIn,
  identityCounts,
  analyzeContacts,
  type NewContact,
  type IdentityAddition,
  type AddedIdentity,
} from '../contacts/bulk.js';
/**
 * The same writes from rows a plugin staged in its own tables (an import's mapping): one
 * `insert … select` a table, the rows read where they lie (docs/plugins.md, "Contacts
 * from staged rows").
 */
export {
  createContactsFrom,
  addIdentitiesFrom,
  lockContactsFrom,
  type StagedContacts,
} from '../contacts/staged.js';
export { IDENTITIES_PER_CONTACT } from '../limits.js';
/**
 * A filter a plugin adds to `contactPage` (an argument of its own, turned into a condition
 * on `contacts`); declared when the backend loads.
 */
export {
  registerContactFilter,
  type ContactFilterDeclaration,
  type ContactFilterScope,
} from '../contacts/filters.js';
/**
 * Contacts out to a file (the importer's export): `contactPage`'s filter arguments and
 * their cost for another field, and every match streamed a batch at a time from one
 * snapshot behind a server-side cursor, with the channels a file gives a column.
 */
export {
  contactFilterArguments,
  contactFilterCost,
  countFilteredContacts,
  exportChannels,
  prepareContactFilter,
  readContactsInBatches,
  type ContactFilterArgs,
  type PreparedContactFilter,
  type ExportedContact,
} from '../contacts/export-read.js';
/** A list in one cell of a file (`a; b`, `;` and `\` escaped): several identities, options. */
export { listCell, splitListCell, LIST_SEPARATOR } from './cells.js';
/**
 * The contact behind an identity a platform delivers (a chat sender): matched, or created
 * with `contact.created`, in the plugin's transaction.
 */
export {
  contactForIdentity,
  type DeliveredIdentity,
  type IdentityContact,
} from '../contacts/channel-contacts.js';
export { recordEvent } from '../events/service.js';
/**
 * A sweep of a table that may hold a large backlog, in rounds of at most `batch` rows each
 * its own statement (docs/plugins.md "Sweeps").
 */
export { sweepInBatches, SWEEP_BATCH } from '../auth/housekeeping.js';
/**
 * A plugin's `contactData.erase` redacts its own events about what it erases (a note's
 * `note.created`, a conversation's `chat.message.received`): each keeps its id, name, time
 * and subject id; the rest of its `data` goes (docs/contacts.md, "Events").
 */
export { redactEvents } from '../events/redact.js';
/** An event's `data`, and the notice a subscription receives (`ctx.events.subscribe`). */
export { eventData } from '../events/queries.js';
/** A subscription's stream of the caller's event notices (as `coreEvent` opens its own). */
export { subscribeEvents } from '../events/graph.js';
export type { BusNotice } from '../events/bus.js';
export { registerChannel } from '../contacts/channels.js';
export { pageSize } from '../paging/index.js';
/**
 * Untrusted input parsed off the serving process: a JavaScript module's default export run
 * in a worker process under memory, time and answer limits, counted against the process's
 * and the workspace's worker bounds (an uploaded spreadsheet; docs/plugins.md); with
 * `streamInWorker`, its answer read back one batch at a time (and a file's bytes, an
 * attachment, streamed to it rather than copied whole).
 */
export {
  runInWorker,
  streamInWorker,
  WorkerLimitError,
  type WorkerAttachment,
  type WorkerLimits,
  type WorkerFailure,
} from '../workers/run.js';
export type { UploadedFile } from '../graph/builder.js';
/**
 * The only way a plugin reaches another host over HTTP (docs/plugins.md "Outbound HTTP"):
 * every address judged by SPEC 8.2 under SVC_OUTBOUND_ALLOWED_HOSTS, redirects judged hop by
 * hop, credentials kept to their origin, time and size bounded.
 */
export { fetchOutbound } from '../outbound/plugin.js';
export {
  describeOutcome,
  answerText,
  answerJson,
  MAX_REDIRECTS,
  type OutboundRequest,
  type OutboundResult,
  type OutboundAnswer,
  type OutboundFailure,
  type OutboundMethod,
} from '../outbound/request.js';
/**
 * Background jobs (docs/plugins.md "Background jobs"): `defineJob` declares a kind stored
 * in the core `jobs` table, `enqueueJob` adds one in the caller's transaction, and the
 * plugin lists its kinds in `jobs`. One runner claims them with leases, retries them with
 * backoff inside a window, bounds them per process and shares slots fairly across
 * workspaces. A kind whose record is the plugin's own row (chat media) declares a
 * `JobKind` with its `JobStorage`.
 */
export {
  defineJob,
  enqueueJob,
  defaultRetryDelayMs,
  type Job,
  type JobDefinition,
  type JobKindOf,
  type EnqueueInput,
} from '../jobs/index.js';
export {
  JobRetry,
  wakeJobs,
  workspaceShare,
  type JobKind,
  type JobStorage,
  type JobContext,
  type ClaimedJob,
  type JobFailureRecord,
} from '../jobs/runner.js';
/**
 * Limits every graph input is held to and what fields cost (docs/limits.md): declare an
 * argument's cap with `extensions: limited({ maxLength })`, a field's statements with
 * `extensions: costs({ cost })`, and check stored text in a service with `checkText`.
 */
export { limited, type InputLimits } from '../graph/input-limits.js';
export { costs, type FieldComplexity, type FieldArguments } from '../graph/complexity.js';
export {
  STATEMENT,
  WRITE,
  SEARCH,
  FILTER_COUNT,
  INDEXED_FILTER,
  PASSWORD,
} from '../graph/costs.js';
export { checkText, TEXT_MAX, DEFAULT_TEXT_MAX, DEFAULT_LIST_MAX } from '../limits.js';
/**
 * Text from outside that is not a graph argument (a platform's payload, a file's cells):
 * judged by the graph's own rule, answering the reason instead of throwing, so a receiver
 * stores what passes and records why the rest did not (docs/plugins.md, "Outside text").
 */
export { textProblem, valueProblem, type TextProblem, type ValueProblem } from '../limits.js';
export { extendCoreType, type CoreParent, type CoreFieldBuilder } from './extend.js';
export {
  AppError,
  refusePlugin as refuse,
  isAppError,
  type ErrorCode,
  type Meta,
} from '../errors.js';
/**
 * Outside text as a message, a log line or a stored record repeats it: control characters
 * and unpaired surrogates escaped, cut to a cap (every reason's message and meta already is).
 */
export { printable } from '../errors.js';
export { workspaceOwned, createdAt } from '../db/columns.js';
export { pluginDrizzleConfig } from './drizzle-config.js';
/**
 * Per-workspace values a plugin reads on most requests (its definitions), held per process
 * under SVC_TENANTS_HELD / SVC_TENANTS_REFRESH, and the workspace's own fields likewise.
 */
export {
  perWorkspace,
  getWorkspaceCached,
  type PerWorkspace,
  type CacheScope,
} from '../workspaces/cache.js';
/** Services plugins offer one another (the fields plugin's, for the importer). */
export {
  provideService,
  findService,
  type PluginServices,
  type FieldsService,
  type WritableField,
  type ExportField,
  type CheckedFieldValues,
} from './services.js';
/**
 * Asked before a channel stores an inbound delivery (SVC_TENANT_MACHINE_GRACE); and the
 * deployment's only workspace, which an environment's channel settings may serve.
 */
export { acceptChannelDelivery, soleWorkspaceId } from '../workspaces/service.js';

/** Declares a plugin; the backend module default-exports the result. */
export function definePlugin<const T extends PluginDefinition>(definition: T): T {
  return definition;
}
