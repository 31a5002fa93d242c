// The chat plugin's tables (docs/chat.md): a workspace's connection to the platform, its
// conversations, their messages and the media files they carry.
import { sql } from 'drizzle-orm';
import {
  bigint,
  customType,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { contacts, createdAt, workspaceOwned } from '../../src/plugin-sdk/index.js';

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * A workspace's own number on the platform: inbound payloads are routed to the workspace
 * whose connection owns their `metadata.phone_number_id`; replies go out with its access
 * token, stored sealed (AES-256-GCM under SVC_CHAT_CREDENTIALS_KEY).
 */
export const chatConnections = pgTable(
  'chat_connections',
  {
    ...workspaceOwned(),
    phoneNumberId: text().notNull(),
    /** nonce ‖ ciphertext ‖ tag. */
    accessTokenSealed: bytea().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    // One connection a workspace, and a number belongs to one workspace.
    uniqueIndex('chat_connections_workspace_key').on(t.workspaceId),
    uniqueIndex('chat_connections_number_key').on(t.phoneNumberId),
  ],
);

/** A thread with one contact on one number. */
export const chatConversations = pgTable(
  'chat_conversations',
  {
    ...workspaceOwned(),
    contactId: uuid().notNull(),
    /** The contact's platform id (`wa_id`): where replies go. */
    peer: text().notNull(),
    /** The workspace's number the thread runs on. */
    phoneNumberId: text().notNull(),
    lastMessageAt: timestamp({ withTimezone: true }).notNull(),
    /** When the contact last wrote: replies are free for 24 hours after it. */
    lastInboundAt: timestamp({ withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    foreignKey({
      name: 'chat_conversations_contact_fk',
      columns: [t.workspaceId, t.contactId],
      foreignColumns: [contacts.workspaceId, contacts.id],
    }).onDelete('cascade'),
    uniqueIndex('chat_conversations_peer_key').on(t.workspaceId, t.phoneNumberId, t.peer),
    // A contact's conversations: erased or merged with it, and its cascade's lookup.
    index('chat_conversations_contact_idx').on(t.workspaceId, t.contactId),
    // chatConversations: newest activity first.
    index('chat_conversations_activity_idx').on(t.workspaceId, t.lastMessageAt, t.id),
  ],
);

/** One message, inbound or a reply, with its delivery status and its media. */
export const chatMessages = pgTable(
  'chat_messages',
  {
    ...workspaceOwned(),
    conversationId: uuid().notNull(),
    /** `in` from the contact, `out` a reply. */
    direction: text().notNull(),
    /** The platform's message id (`wamid.…`): a redelivery is stored once. */
    externalId: text(),
    /** text, image, audio, video, document, sticker, location, contacts, interactive, button, reaction, unsupported. */
    type: text().notNull(),
    /** What a reader shows: the text, a caption, a reply's title, a place's name… */
    content: text().notNull(),
    /** The message as the platform sent it (its type's object), for what `content` leaves out. */
    payload: jsonb()
      .$type<Record<string, unknown>>()
      .notNull()
      .default(sql`'{}'::jsonb`),
    sentAt: timestamp({ withTimezone: true }).notNull(),
    /** Replies: accepted, sent, delivered, read or failed (never backwards). */
    status: text(),
    /** A failed reply's explanation: the platform's code, title and details. */
    statusError: jsonb().$type<{ code: number | null; title: string; details: string | null }>(),
    senderUserId: uuid(),
    // Media: the platform's id, what it says of it, and where the download stands.
    mediaId: text(),
    mediaMimeType: text(),
    mediaFileName: text(),
    mediaBytes: bigint({ mode: 'number' }),
    /** pending, stored, failed or too_large (docs/chat.md). */
    mediaState: text(),
    mediaAttempts: integer().notNull().default(0),
    mediaNextAt: timestamp({ withTimezone: true }),
    mediaError: text(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    foreignKey({
      name: 'chat_messages_conversation_fk',
      columns: [t.workspaceId, t.conversationId],
      foreignColumns: [chatConversations.workspaceId, chatConversations.id],
    }).onDelete('cascade'),
    uniqueIndex('chat_messages_external_key').on(t.workspaceId, t.externalId),
    // A conversation's messages, newest first.
    index('chat_messages_conversation_idx').on(t.workspaceId, t.conversationId, t.sentAt, t.id),
    // The media worker's queue: pending downloads by when they are due.
    index('chat_messages_media_due_idx')
      .on(t.mediaNextAt)
      .where(sql`media_state = 'pending'`),
  ],
);

/**
 * A status the platform reported for a reply this service has not stored yet: the platform
 * can report `sent` before the send's own answer is written. Applied when the reply is.
 * Bounded per workspace and expired by housekeeping (docs/limits.md, "Tables fed from
 * outside").
 */
export const chatEarlyStatuses = pgTable(
  'chat_early_statuses',
  {
    workspaceId: uuid().notNull(),
    externalId: text().notNull(),
    status: text().notNull(),
    statusError: jsonb().$type<{ code: number | null; title: string; details: string | null }>(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.externalId, t.status] }),
    // Housekeeping's expiry, across workspaces.
    index('chat_early_statuses_created_idx').on(t.createdAt),
  ],
);

/**
 * An inbound item the service could not store (a message whose text holds a NUL, a sender
 * id past the identifier cap…), kept so an admin sees what was dropped and why. The
 * platform's ids are stored `printable`. Bounded per workspace and expired by housekeeping.
 */
export const chatRefusedInbound = pgTable(
  'chat_refused_inbound',
  {
    ...workspaceOwned(),
    /** `message`, `status`, or `payload` for the items past a payload's cap. */
    kind: text().notNull(),
    /** The platform's id of the item (`wamid.…`); empty when it gave none. */
    platformId: text().notNull(),
    /** The message's sender or the status's recipient; empty when it gave none. */
    peer: text().notNull(),
    /** Why: `text_invalid`, `text_too_long`, `value_too_deep`, `message_incomplete`… */
    reason: text().notNull(),
    /** Where in the item, or what more the reason needs: `text.body`, `from`. */
    detail: text().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    // A redelivered payload records its refusals once.
    uniqueIndex('chat_refused_inbound_item_key').on(t.workspaceId, t.kind, t.platformId),
    // The admin's list, newest first, and the trim to the newest kept.
    index('chat_refused_inbound_recent_idx').on(t.workspaceId, t.createdAt, t.id),
    // Housekeeping's expiry, across workspaces.
    index('chat_refused_inbound_created_idx').on(t.createdAt),
  ],
);

/** A stored media file's bytes, apart from the message so reading a thread never loads them. */
export const chatMedia = pgTable(
  'chat_media',
  {
    workspaceId: uuid().notNull(),
    messageId: uuid().notNull(),
    contentType: text().notNull(),
    size: bigint({ mode: 'number' }).notNull(),
    /** SHA-256 of the bytes, hex: the ETag. */
    sha256: text().notNull(),
    bytes: bytea().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.messageId] }),
    foreignKey({
      name: 'chat_media_message_fk',
      columns: [t.workspaceId, t.messageId],
      foreignColumns: [chatMessages.workspaceId, chatMessages.id],
    }).onDelete('cascade'),
  ],
);

export type ChatConnection = typeof chatConnections.$inferSelect;
export type ChatConversation = typeof chatConversations.$inferSelect;
export type ChatMessage = typeof chatMessages.$inferSelect;
export type ChatRefusedInbound = typeof chatRefusedInbound.$inferSelect;
