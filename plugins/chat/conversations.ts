// Reading conversations and their messages, newest first, paged by `before` (an id).
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import {
  contacts,
  loaderFamily,
  pageSize,
  refuse,
  signedIn,
  type Context,
  type Db,
} from '../../src/plugin-sdk/index.js';
import {
  chatConversations,
  chatMessages,
  chatRefusedInbound,
  type ChatConversation,
  type ChatMessage,
  type ChatRefusedInbound,
} from './tables.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A conversation as the graph answers it: with its contact's name and last message. */
export type ConversationView = ChatConversation & {
  contactName: string;
  lastMessage: ChatMessage | null;
};

/** Conversations of the workspace matching `where`, each with its contact and last message. */
async function conversationsWhere(
  ctx: Context,
  where: SQL | undefined,
  limit: number,
): Promise<ConversationView[]> {
  const { workspaceId } = signedIn(ctx);
  const { db } = ctx.database;
  const rows = await db
    .select({ conversation: chatConversations, contactName: contacts.name })
    .from(chatConversations)
    .innerJoin(
      contacts,
      and(
        eq(contacts.workspaceId, chatConversations.workspaceId),
        eq(contacts.id, chatConversations.contactId),
      ),
    )
    .where(and(eq(chatConversations.workspaceId, workspaceId), where))
    .orderBy(desc(chatConversations.lastMessageAt), desc(chatConversations.id))
    .limit(limit);
  if (rows.length === 0) return [];
  // Every listed conversation's last message in one statement.
  const last = await db
    .selectDistinctOn([chatMessages.conversationId])
    .from(chatMessages)
    .where(
      and(
        eq(chatMessages.workspaceId, workspaceId),
        inArray(
          chatMessages.conversationId,
          rows.map((row) => row.conversation.id),
        ),
      ),
    )
    .orderBy(chatMessages.conversationId, desc(chatMessages.sentAt), desc(chatMessages.id));
  const lastOf = new Map(last.map((message) => [message.conversationId, message]));
  return rows.map(({ conversation, contactName }) => ({
    ...conversation,
    contactName,
    lastMessage: lastOf.get(conversation.id) ?? null,
  }));
}

/** `chatConversation(id)`: another workspace's id answers as a made-up one. */
export async function findConversation(ctx: Context, id: string): Promise<ConversationView> {
  const [found] = await conversationsWhere(ctx, eq(chatConversations.id, id), 1);
  if (!found) throw refuse('conversation_not_found');
  return found;
}

/** `chatConversations(first, before)`: newest activity first. */
export async function listConversations(
  ctx: Context,
  args: { first?: number | null; before?: string | null },
): Promise<ConversationView[]> {
  const limit = pageSize(args.first, ctx.config);
  const { workspaceId } = signedIn(ctx);
  if (args.before) await findConversation(ctx, args.before); // an unknown cursor is refused
  // Compared in the database: its timestamps are finer than a JavaScript Date.
  const before = args.before
    ? sql`(${chatConversations.lastMessageAt}, ${chatConversations.id}) < (
        select last_message_at, id from chat_conversations
        where workspace_id = ${workspaceId} and id = ${args.before})`
    : undefined;
  return conversationsWhere(ctx, before, limit);
}

/**
 * `ChatConversation.messages(first, before)`: newest first. Without `before`, one loader
 * per request and page size reads a whole page of conversations' messages at once.
 */
export async function conversationMessages(
  ctx: Context,
  conversationId: string,
  args: { first?: number | null; before?: string | null },
): Promise<ChatMessage[]> {
  const { workspaceId } = signedIn(ctx);
  const limit = pageSize(args.first, ctx.config);
  if (!args.before) {
    return ctx.loaders.of(messageLoaders).messagesOf(limit).load(conversationId);
  }
  return ctx.database.db
    .select()
    .from(chatMessages)
    .where(
      and(
        eq(chatMessages.workspaceId, workspaceId),
        eq(chatMessages.conversationId, conversationId),
        sql`(${chatMessages.sentAt}, ${chatMessages.id}) < (
          select sent_at, id from chat_messages
          where workspace_id = ${workspaceId} and id = ${args.before})`,
      ),
    )
    .orderBy(desc(chatMessages.sentAt), desc(chatMessages.id))
    .limit(limit);
}

/** A request's message loaders (the SDK's `ctx.loaders.of`). */
function messageLoaders(db: Db, workspaceId: string) {
  return {
    messagesOf: loaderFamily(
      (conversationIds, limit: number) => latestMessages(db, workspaceId, conversationIds, limit),
      (message) => message.conversationId,
    ),
  };
}

/**
 * The newest `limit` messages of each conversation: a lateral walk of the conversation
 * index picks their ids (bounded per conversation), then one read fetches them.
 */
async function latestMessages(
  db: Db,
  workspaceId: string,
  conversationIds: readonly string[],
  limit: number,
): Promise<ChatMessage[]> {
  const picked = await db.execute<{ id: string }>(sql`
    select m.id
    from unnest(${`{${conversationIds.join(',')}}`}::uuid[]) as c(id)
    cross join lateral (
      select id from chat_messages
      where workspace_id = ${workspaceId} and conversation_id = c.id
      order by sent_at desc, id desc
      limit ${limit}
    ) m`);
  if (picked.length === 0) return [];
  return db
    .select()
    .from(chatMessages)
    .where(
      and(
        eq(chatMessages.workspaceId, workspaceId),
        inArray(
          chatMessages.id,
          picked.map((row) => row.id),
        ),
      ),
    )
    .orderBy(desc(chatMessages.sentAt), desc(chatMessages.id));
}

/** One message of the workspace (a subscription's arrival). */
export async function findMessage(ctx: Context, id: string): Promise<ChatMessage> {
  const { workspaceId } = signedIn(ctx);
  if (!UUID.test(id)) throw refuse('conversation_not_found');
  const [found] = await ctx.database.db
    .select()
    .from(chatMessages)
    .where(and(eq(chatMessages.workspaceId, workspaceId), eq(chatMessages.id, id)));
  if (!found) throw refuse('conversation_not_found');
  return found;
}

/** The workspace's refused inbound items, newest first (docs/chat.md, "Refused items"). */
export async function listRefusedInbound(
  ctx: Context,
  args: { first?: number | null },
): Promise<ChatRefusedInbound[]> {
  const { workspaceId } = signedIn(ctx);
  return ctx.database.db
    .select()
    .from(chatRefusedInbound)
    .where(eq(chatRefusedInbound.workspaceId, workspaceId))
    .orderBy(desc(chatRefusedInbound.createdAt), desc(chatRefusedInbound.id))
    .limit(pageSize(args.first, ctx.config));
}
