// What the platform posts to the webhook: messages from contacts and the delivery statuses
// of replies (docs/chat.md). Everything in one payload is stored in one transaction.
import { and, eq, inArray, sql } from 'drizzle-orm';
import {
  acceptChannelDelivery,
  contactForIdentity,
  type Db,
  type RouteContext,
} from '../../src/plugin-sdk/index.js';
import { MESSAGE_RECEIVED, MESSAGE_STATUS, recordChatEvent } from './events.js';
import { workspaceOfNumber } from './settings.js';
import { chatConversations, chatEarlyStatuses, chatMessages } from './tables.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const objects = (value: unknown): Json[] => (Array.isArray(value) ? value.filter(isObject) : []);
const text = (value: unknown): string =>
  typeof value === 'string' ? value.replaceAll('\u0000', '').toWellFormed() : '';

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
  refused: number;
  media: boolean;
}

/** Stores a payload's messages and statuses in one transaction. */
export async function storePayload(ctx: RouteContext, changes: Json[]): Promise<Stored> {
  const stored: Stored = { messages: 0, redelivered: 0, statuses: 0, refused: 0, media: false };
  // The workspace of each number, asked once a payload and outside the transaction.
  const workspaces = new Map<string, string | null>();
  for (const value of changes) {
    const number = isObject(value.metadata) ? text(value.metadata.phone_number_id) : '';
    if (!number || workspaces.has(number)) continue;
    const workspaceId = await workspaceOfNumber(ctx.database.db, ctx.config, number);
    const accepted = workspaceId !== null && (await acceptChannelDelivery(ctx, workspaceId));
    workspaces.set(number, accepted ? workspaceId : null);
  }
  await ctx.database.db.transaction(async (tx) => {
    for (const value of changes) {
      const number = isObject(value.metadata) ? text(value.metadata.phone_number_id) : '';
      const workspaceId = workspaces.get(number);
      if (!workspaceId) {
        stored.refused += objects(value.messages).length + objects(value.statuses).length;
        continue;
      }
      const names = new Map(
        objects(value.contacts).map((contact) => [
          text(contact.wa_id),
          isObject(contact.profile) ? text(contact.profile.name) : '',
        ]),
      );
      for (const message of objects(value.messages)) {
        const read = readMessage(message);
        if (!read) continue;
        const outcome = await storeMessage(tx, workspaceId, number, read, names.get(read.from));
        if (outcome === 'redelivered') stored.redelivered += 1;
        else stored.messages += 1;
        if (outcome === 'stored' && read.media) stored.media = true;
      }
      for (const status of objects(value.statuses)) {
        if (await storeStatus(tx, workspaceId, status)) stored.statuses += 1;
      }
    }
  });
  return stored;
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
 * not stored yet (its send's answer is still being written) waits in chat_early_statuses.
 */
async function storeStatus(tx: Db, workspaceId: string, status: Json): Promise<boolean> {
  const externalId = text(status.id);
  const next = text(status.status);
  if (!externalId || !(next in STATUS_RANK) || next === 'accepted') return false;
  const statusError = next === 'failed' ? explanationOf(status) : null;
  if (await applyStatus(tx, workspaceId, externalId, next, statusError)) return true;
  const [reply] = await tx
    .select({ id: chatMessages.id })
    .from(chatMessages)
    .where(and(eq(chatMessages.workspaceId, workspaceId), eq(chatMessages.externalId, externalId)));
  if (reply) return false; // known, and already further along
  await tx
    .insert(chatEarlyStatuses)
    .values({ workspaceId, externalId, status: next, statusError })
    .onConflictDoNothing();
  return false;
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
