// What the platform posts to the webhook: messages from contacts and the delivery statuses
// of replies (docs/chat.md). A payload is stored in batches, each its own transaction; an
// item that cannot be stored is recorded with its reason and the rest go on.
import { and, eq, inArray, sql } from 'drizzle-orm';
import {
  acceptChannelDelivery,
  contactForIdentity,
  DEFAULT_TEXT_MAX,
  isAppError,
  printable,
  TEXT_MAX,
  valueProblem,
  type Db,
  type PluginSweep,
  type RouteContext,
} from '../../src/plugin-sdk/index.js';
import { MESSAGE_RECEIVED, MESSAGE_STATUS, recordChatEvent } from './events.js';
import { routeOfNumber } from './settings.js';
import {
  chatConversations,
  chatEarlyStatuses,
  chatMessages,
  chatRefusedInbound,
} from './tables.js';

/** Messages and statuses one payload may carry; those past it are recorded, not stored. */
export const PAYLOAD_ITEMS_MAX = 1000;
/** Items stored in one transaction: no payload holds a transaction longer than this many. */
export const BATCH_ITEMS = 100;
/** Statuses waiting for their reply, per workspace; one past it is dropped. */
export const EARLY_STATUSES_MAX = 1000;
/** How long a status waits for its reply before housekeeping forgets it. */
export const EARLY_STATUS_TTL_MS = 60 * 60 * 1000;
/** Refused items an admin can read, per workspace: the newest are kept. */
export const REFUSED_KEPT = 1000;
/** How long a refused item is kept before housekeeping forgets it. */
export const REFUSED_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** Characters of a platform id or a peer a refused record keeps. */
const REFUSED_ID_MAX = 200;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const objects = (value: unknown): Json[] => (Array.isArray(value) ? value.filter(isObject) : []);
// Items reach the readers below only once `itemProblem` passed them: their strings are valid.
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The changes of a payload, or null when it is not one the platform sends. */
export function changesOf(payload: unknown): Json[] | null {
  if (!isObject(payload) || !Array.isArray(payload.entry)) return null;
  return objects(payload.entry).flatMap((entry) =>
    objects(entry.changes)
      .map((change) => change.value)
      .filter(isObject),
  );
}

/** Media types: the message's object names the file. */
const MEDIA_TYPES = new Set(['image', 'audio', 'video', 'document', 'sticker']);

/** A message as stored: what a reader shows, and its media if it carries a file. */
export interface ReadMessage {
  externalId: string;
  from: string;
  type: string;
  content: string;
  payload: Json;
  sentAt: Date;
  media: { id: string; mimeType: string | null; fileName: string | null } | null;
}

/** Reads one platform message; null when it names no sender or id. */
export function readMessage(message: Json): ReadMessage | null {
  const externalId = text(message.id);
  const from = text(message.from);
  if (!externalId || !from) return null;
  const type = text(message.type) || 'unsupported';
  const body = isObject(message[type]) ? message[type] : {};
  const seconds = Number(text(message.timestamp));
  const sentAt = Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : new Date();
  const media =
    MEDIA_TYPES.has(type) && text(body.id)
      ? {
          id: text(body.id),
          mimeType: text(body.mime_type) || null,
          fileName: text(body.filename) || null,
        }
      : null;
  const payload = type === 'contacts' ? { contacts: message.contacts } : body;
  return {
    externalId,
    from,
    type,
    content: contentOf(type, message, body),
    payload: type === 'unsupported' ? { errors: message.errors ?? [] } : payload,
    sentAt,
    media,
  };
}

/** What a reader shows of a message of each type (docs/chat.md, "Message types"). */
function contentOf(type: string, message: Json, body: Json): string {
  switch (type) {
    case 'text':
      return text(body.body);
    case 'image':
    case 'video':
    case 'document':
    case 'audio':
    case 'sticker':
      return text(body.caption) || text(body.filename);
    case 'location': {
      const place = [text(body.name), text(body.address)].filter(Boolean).join(', ');
      return place || `${String(body.latitude)}, ${String(body.longitude)}`;
    }
    case 'contacts':
      return objects(message.contacts)
        .map((card) => (isObject(card.name) ? text(card.name.formatted_name) : ''))
        .filter(Boolean)
        .join(', ');
    case 'interactive': {
      const reply = isObject(body.button_reply)
        ? body.button_reply
        : isObject(body.list_reply)
          ? body.list_reply
          : {};
      return text(reply.title);
    }
    case 'button':
      return text(body.text);
    case 'reaction':
      return text(body.emoji);
    default:
      return '';
  }
}

/** Delivery statuses in the order they happen: a status never moves a reply backwards. */
const STATUS_RANK: Record<string, number> = {
  accepted: 0,
  sent: 1,
  delivered: 2,
  read: 3,
  failed: 4,
};

/** What a payload's storing did, for the log line and the media worker. */
export interface Stored {
  messages: number;
  redelivered: number;
  statuses: number;
  /** Items for a number no workspace takes (or a workspace past its grace): dropped. */
  dropped: number;
  /** Why items were dropped, by number (at most a few numbers a payload): for the log line. */
  unrouted?: Record<string, string>;
  /** The refused items' reasons, counted: for the log line. */
  refusedReasons?: Record<string, number>;
  /** Items recorded in chat_refused_inbound instead of stored. */
  refused: number;
  /** Statuses for unknown replies dropped because the workspace's waiting ones are full. */
  earlyDropped: number;
  media: boolean;
}

/** One message or status of a payload, with the workspace it is for. */
interface Item {
  workspaceId: string;
  number: string;
  /** `payload` stands for the items past a payload's cap, in the refused record only. */
  kind: 'message' | 'status' | 'payload';
  raw: Json;
  /** The profile name the payload gives a message's sender. */
  profileName?: string;
}

/** Why an item is not stored, as an admin reads it. */
interface Refusal {
  reason: string;
  detail: string;
}

/**
 * The caps of a message's or a status's strings: the graph's rule for outside text
 * (`valueProblem`), with the platform ids held to the identifier cap.
 */
const ITEM_CAPS = {
  maxLength: DEFAULT_TEXT_MAX,
  maxLengths: {
    id: TEXT_MAX.identifier,
    from: TEXT_MAX.identifier,
    recipient_id: TEXT_MAX.identifier,
  },
};

function itemProblem(item: Item): Refusal | null {
  const problem = valueProblem(item.raw, ITEM_CAPS);
  if (problem) return { reason: problem.reason, detail: problem.at };
  if (item.kind === 'message' && !(text(item.raw.id) && text(item.raw.from))) {
    return { reason: 'message_incomplete', detail: text(item.raw.id) ? 'from' : 'id' };
  }
  return null;
}

/**
 * SQLSTATE classes that describe the data, not the database's state: a data exception (22)
 * or a program limit (54) fails the same way on every redelivery, so the item is refused.
 */
function unstorable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}

/**
 * Stores a payload's messages and statuses, BATCH_ITEMS to a transaction and at most
 * PAYLOAD_ITEMS_MAX of them. An item that fails the text rules, or that the database or
 * the contacts refuse for what it holds, is recorded with its reason in its workspace's
 * chat_refused_inbound; everything else is stored. Only a failure of the database itself
 * throws (the webhook answers 500 and the platform delivers again): what a batch already
 * stored is found again by its platform id, so a redelivery stores each item once.
 */
export async function storePayload(ctx: RouteContext, changes: Json[]): Promise<Stored> {
  const stored: Stored = { ...zero };
  // The workspace of each number, asked once a payload and outside the transactions.
  const workspaces = new Map<string, { workspaceId: string } | { unrouted: string }>();
  const items: Item[] = [];
  for (const value of changes) {
    const number = isObject(value.metadata) ? text(value.metadata.phone_number_id) : '';
    if (number && !workspaces.has(number)) workspaces.set(number, await routeOf(ctx, number));
    const route = workspaces.get(number) ?? { unrouted: 'the change names no phone_number_id' };
    if ('unrouted' in route) {
      const count = objects(value.messages).length + objects(value.statuses).length;
      stored.dropped += count;
      if (count > 0) (stored.unrouted ??= {})[number.slice(0, 40) || '(none)'] = route.unrouted;
      continue;
    }
    const { workspaceId } = route;
    const names = new Map<unknown, unknown>(
      objects(value.contacts).map((contact) => [
        contact.wa_id,
        isObject(contact.profile) ? contact.profile.name : '',
      ]),
    );
    for (const raw of objects(value.messages)) {
      const name = names.get(raw.from);
      items.push({
        workspaceId,
        number,
        kind: 'message',
        raw,
        profileName: typeof name === 'string' ? name : '',
      });
    }
    for (const raw of objects(value.statuses)) {
      items.push({ workspaceId, number, kind: 'status', raw });
    }
  }
  const over = items.splice(PAYLOAD_ITEMS_MAX);
  for (let start = 0; start < items.length; start += BATCH_ITEMS) {
    await storeBatch(ctx, items.slice(start, start + BATCH_ITEMS), stored);
  }
  if (over.length > 0) {
    // One record a workspace for everything past the cap: the table stays bounded.
    const firstOf = new Map<string, Item>();
    for (const item of over)
      if (!firstOf.has(item.workspaceId)) firstOf.set(item.workspaceId, item);
    const detail = `${over.length} items past the first ${PAYLOAD_ITEMS_MAX}`;
    await ctx.database.db.transaction((tx) =>
      recordRefused(
        tx,
        [...firstOf.values()].map((item) => [
          { ...item, kind: 'payload' },
          { reason: 'payload_too_many_items', detail },
        ]),
      ),
    );
    stored.refused += over.length;
    (stored.refusedReasons ??= {}).payload_too_many_items = over.length;
  }
  return stored;
}

/** The route of a payload's number, a workspace that takes no deliveries now included. */
async function routeOf(ctx: RouteContext, number: string) {
  const route = await routeOfNumber(ctx.database.db, ctx.config, number);
  if ('unrouted' in route || (await acceptChannelDelivery(ctx, route.workspaceId))) return route;
  return { unrouted: 'its workspace is deactivated and past its grace for deliveries' };
}

/** Why the database or the contacts refused an item, or null when the failure is not its. */
function refusalOf(error: unknown): Refusal | null {
  if (isAppError(error)) return { reason: error.reason, detail: '' };
  if (unstorable(error)) return { reason: 'value_unstorable', detail: '' };
  return null;
}

/**
 * One batch in one transaction, the refused items recorded in it. Should the database or
 * the contacts refuse an item that passed the text rules, the batch is rolled back and
 * stored again one item a transaction, so that item alone is recorded: the common case
 * pays for no savepoints.
 */
async function storeBatch(ctx: RouteContext, batch: readonly Item[], stored: Stored) {
  let tally: Stored = { ...zero };
  try {
    await ctx.database.db.transaction(async (tx) => {
      tally = { ...zero };
      const refused: [Item, Refusal][] = [];
      for (const item of batch) {
        const problem = itemProblem(item);
        if (problem) refused.push([item, problem]);
        else await storeItem(tx, item, tally);
      }
      await recordRefused(tx, refused);
      countRefused(tally, refused);
    });
  } catch (error) {
    if (!refusalOf(error)) throw error;
    tally = { ...zero };
    for (const item of batch) await storeAlone(ctx, item, tally);
  }
  add(stored, tally);
}

/** One item in its own transaction; refused, it is recorded in another. */
async function storeAlone(ctx: RouteContext, item: Item, tally: Stored): Promise<void> {
  let refusal = itemProblem(item);
  if (!refusal) {
    try {
      await ctx.database.db.transaction((tx) => storeItem(tx, item, tally));
      return;
    } catch (error) {
      refusal = refusalOf(error);
      if (!refusal) throw error;
      ctx.log.warn({ err: error, kind: item.kind }, 'chat inbound item refused');
    }
  }
  await ctx.database.db.transaction((tx) => recordRefused(tx, [[item, refusal]]));
  countRefused(tally, [[item, refusal]]);
}

const zero = {
  messages: 0,
  redelivered: 0,
  statuses: 0,
  dropped: 0,
  refused: 0,
  earlyDropped: 0,
  media: false,
} satisfies Stored;

/** Counts refused items and their reasons (the log line names them). */
function countRefused(tally: Stored, refused: readonly [Item, Refusal][]): void {
  tally.refused += refused.length;
  for (const [, refusal] of refused) {
    const reasons = (tally.refusedReasons ??= {});
    reasons[refusal.reason] = (reasons[refusal.reason] ?? 0) + 1;
  }
}

/** Adds a batch's counts to the payload's. */
function add(stored: Stored, tally: Stored): void {
  for (const [reason, count] of Object.entries(tally.refusedReasons ?? {})) {
    const reasons = (stored.refusedReasons ??= {});
    reasons[reason] = (reasons[reason] ?? 0) + count;
  }
  stored.messages += tally.messages;
  stored.redelivered += tally.redelivered;
  stored.statuses += tally.statuses;
  stored.refused += tally.refused;
  stored.earlyDropped += tally.earlyDropped;
  stored.media ||= tally.media;
}

/** Stores one checked item. */
async function storeItem(tx: Db, item: Item, stored: Stored): Promise<void> {
  if (item.kind === 'status') {
    const outcome = await storeStatus(tx, item.workspaceId, item.raw);
    if (outcome === 'applied') stored.statuses += 1;
    else if (outcome === 'dropped') stored.earlyDropped += 1;
    return;
  }
  const read = readMessage(item.raw)!;
  const outcome = await storeMessage(tx, item.workspaceId, item.number, read, item.profileName);
  if (outcome === 'redelivered') stored.redelivered += 1;
  else stored.messages += 1;
  if (outcome === 'stored' && read.media) stored.media = true;
}

/**
 * Records refused items (once each: a redelivery finds them recorded) and trims each
 * workspace's records to the newest REFUSED_KEPT.
 */
async function recordRefused(tx: Db, refused: readonly [Item, Refusal][]): Promise<void> {
  if (refused.length === 0) return;
  const rows = refused.map(([item, refusal]) => ({
    workspaceId: item.workspaceId,
    kind: item.kind,
    platformId: printable(outsideString(item.raw.id), REFUSED_ID_MAX),
    peer: printable(outsideString(item.raw.from ?? item.raw.recipient_id), REFUSED_ID_MAX),
    reason: refusal.reason,
    detail: printable(refusal.detail, REFUSED_ID_MAX),
  }));
  await tx.insert(chatRefusedInbound).values(rows).onConflictDoNothing();
  for (const workspaceId of new Set(rows.map((row) => row.workspaceId))) {
    await tx.execute(sql`
      delete from chat_refused_inbound
       where workspace_id = ${workspaceId}
         and id in (select id from chat_refused_inbound
                     where workspace_id = ${workspaceId}
                     order by created_at desc, id desc
                    offset ${REFUSED_KEPT})`);
  }
}

/** A platform value as text for a record, whatever JSON type it came as. */
function outsideString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return '';
}

/** One inbound message: its contact, its conversation, the row and its event. */
async function storeMessage(
  tx: Db,
  workspaceId: string,
  phoneNumberId: string,
  message: ReadMessage,
  profileName: string | undefined,
): Promise<'stored' | 'redelivered'> {
  // Serialises this sender's deliveries, so the redelivery check below holds.
  const contact = await contactForIdentity(
    tx,
    workspaceId,
    { channel: 'chat', identifier: message.from, displayName: profileName || null },
    [{ channel: 'phone', identifier: `+${message.from}` }],
  );
  const [known] = await tx
    .select({ id: chatMessages.id })
    .from(chatMessages)
    .where(
      and(
        eq(chatMessages.workspaceId, workspaceId),
        eq(chatMessages.externalId, message.externalId),
      ),
    );
  if (known) return 'redelivered';
  const [conversation] = await tx
    .insert(chatConversations)
    .values({
      workspaceId,
      contactId: contact.contactId,
      peer: message.from,
      phoneNumberId,
      lastMessageAt: message.sentAt,
      lastInboundAt: message.sentAt,
    })
    .onConflictDoUpdate({
      target: [
        chatConversations.workspaceId,
        chatConversations.phoneNumberId,
        chatConversations.peer,
      ],
      set: {
        lastMessageAt: sql`greatest(${chatConversations.lastMessageAt}, excluded.last_message_at)`,
        lastInboundAt: sql`greatest(${chatConversations.lastInboundAt}, excluded.last_inbound_at)`,
      },
    })
    .returning({ id: chatConversations.id });
  const [row] = await tx
    .insert(chatMessages)
    .values({
      workspaceId,
      conversationId: conversation!.id,
      direction: 'in',
      externalId: message.externalId,
      type: message.type,
      content: message.content,
      payload: message.payload,
      sentAt: message.sentAt,
      ...(message.media
        ? {
            mediaId: message.media.id,
            mediaMimeType: message.media.mimeType,
            mediaFileName: message.media.fileName,
            mediaState: 'pending',
            mediaNextAt: sql`now()`,
          }
        : {}),
    })
    .returning({ id: chatMessages.id });
  await recordChatEvent(tx, {
    workspaceId,
    name: MESSAGE_RECEIVED,
    conversationId: conversation!.id,
    data: {
      message_id: row!.id,
      contact_id: contact.contactId,
      contact_name: contact.contactName,
      external_id: message.externalId,
      text: message.content,
    },
  });
  return 'stored';
}

type StatusError = { code: number | null; title: string; details: string | null };

/** A failed status's explanation, as the platform gives it. */
function explanationOf(status: Json): StatusError {
  const error = objects(status.errors)[0];
  return {
    code: typeof error?.code === 'number' ? error.code : null,
    title: text(error?.title) || text(error?.message) || 'delivery failed',
    details: isObject(error?.error_data) ? text(error.error_data.details) || null : null,
  };
}

/**
 * A reply's delivery status: applied only when it moves the reply forward. One for a reply
 * not stored yet (its send's answer is still being written) waits in chat_early_statuses,
 * unless EARLY_STATUSES_MAX of the workspace's already wait: then it is dropped (a later
 * status moves the reply all the same).
 */
async function storeStatus(
  tx: Db,
  workspaceId: string,
  status: Json,
): Promise<'applied' | 'ignored' | 'waiting' | 'dropped'> {
  const externalId = text(status.id);
  const next = text(status.status);
  if (!externalId || !(next in STATUS_RANK) || next === 'accepted') return 'ignored';
  const statusError = next === 'failed' ? explanationOf(status) : null;
  if (await applyStatus(tx, workspaceId, externalId, next, statusError)) return 'applied';
  const [reply] = await tx
    .select({ id: chatMessages.id })
    .from(chatMessages)
    .where(and(eq(chatMessages.workspaceId, workspaceId), eq(chatMessages.externalId, externalId)));
  if (reply) return 'ignored'; // known, and already further along
  // One statement, so the count and the insert see the same rows.
  const waiting = await tx.execute(sql`
    insert into chat_early_statuses (workspace_id, external_id, status, status_error)
    select ${workspaceId}, ${externalId}, ${next}, ${statusError === null ? null : JSON.stringify(statusError)}::jsonb
     where (select count(*) from (select 1 from chat_early_statuses
                                   where workspace_id = ${workspaceId}
                                   limit ${EARLY_STATUSES_MAX}) held) < ${EARLY_STATUSES_MAX}
    on conflict do nothing
    returning 1`);
  if (waiting.length > 0) return 'waiting';
  const [already] = await tx
    .select({ status: chatEarlyStatuses.status })
    .from(chatEarlyStatuses)
    .where(
      and(
        eq(chatEarlyStatuses.workspaceId, workspaceId),
        eq(chatEarlyStatuses.externalId, externalId),
        eq(chatEarlyStatuses.status, next),
      ),
    );
  return already ? 'waiting' : 'dropped';
}

/** Moves a stored reply to `next` if that is forward, recording the conversation's event. */
export async function applyStatus(
  tx: Db,
  workspaceId: string,
  externalId: string,
  next: string,
  statusError: StatusError | null,
): Promise<boolean> {
  const lower = Object.entries(STATUS_RANK)
    .filter(([, rank]) => rank < STATUS_RANK[next]!)
    .map(([name]) => name);
  const [moved] = await tx
    .update(chatMessages)
    .set({ status: next, statusError })
    .where(
      and(
        eq(chatMessages.workspaceId, workspaceId),
        eq(chatMessages.externalId, externalId),
        eq(chatMessages.direction, 'out'),
        inArray(chatMessages.status, lower),
      ),
    )
    .returning({ id: chatMessages.id, conversationId: chatMessages.conversationId });
  if (!moved) return false;
  await recordChatEvent(tx, {
    workspaceId,
    name: MESSAGE_STATUS,
    conversationId: moved.conversationId,
    data: { message_id: moved.id, external_id: externalId, status: next },
  });
  return true;
}

/** Applies (in rank order) and forgets the statuses that arrived before their reply. */
export async function applyEarlyStatuses(
  tx: Db,
  workspaceId: string,
  externalId: string,
): Promise<void> {
  const early = await tx
    .delete(chatEarlyStatuses)
    .where(
      and(
        eq(chatEarlyStatuses.workspaceId, workspaceId),
        eq(chatEarlyStatuses.externalId, externalId),
      ),
    )
    .returning();
  early.sort((a, b) => STATUS_RANK[a.status]! - STATUS_RANK[b.status]!);
  for (const status of early) {
    await applyStatus(tx, workspaceId, externalId, status.status, status.statusError ?? null);
  }
}

/** Housekeeping's share of the chat tables: what waited or was refused too long goes. */
export const chatSweeps: PluginSweep[] = [
  {
    name: 'early statuses',
    run: async (db) =>
      (
        await db.execute(sql`
          delete from chat_early_statuses
           where created_at < now() - make_interval(secs => ${EARLY_STATUS_TTL_MS / 1000})
          returning 1`)
      ).length,
  },
  {
    name: 'refused inbound items',
    run: async (db) =>
      (
        await db.execute(sql`
          delete from chat_refused_inbound
           where created_at < now() - make_interval(secs => ${REFUSED_TTL_MS / 1000})
          returning 1`)
      ).length,
  },
];
