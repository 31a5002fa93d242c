// Replies (chatSendMessage): the platform's send endpoint, then the reply stored as
// `accepted`; its delivery statuses arrive later at the webhook (docs/chat.md).
import { and, eq, sql } from 'drizzle-orm';
import {
  answerJson,
  checkText,
  describeOutcome,
  fetchOutbound,
  refuse,
  signedIn,
  type Context,
} from '../../src/plugin-sdk/index.js';
import { applyEarlyStatuses } from './inbound.js';
import { lineOf, type ChatLine } from './settings.js';
import { chatConversations, chatMessages, type ChatMessage } from './tables.js';

/** The platform's own cap on a text message's body. */
export const TEXT_MAX_CHARS = 4096;
/** How long a send waits for the platform (as a webhook delivery waits for a subscriber). */
const SEND_TIMEOUT_MS = 10_000;
/** The platform answers a send with a small JSON object. */
const ANSWER_MAX_BYTES = 64 * 1024;

/** What the platform answers when it does not accept a message. */
interface PlatformError {
  error?: { code?: number; message?: string; error_user_title?: string; type?: string };
}

/** Sends `text` to the conversation's contact and stores the reply. */
export async function sendMessage(
  ctx: Context,
  conversationId: string,
  given: string,
): Promise<ChatMessage> {
  const { workspaceId, actor } = signedIn(ctx);
  const text = given.trim();
  if (!text) throw refuse('message_content_required');
  checkText(text, 'text', TEXT_MAX_CHARS);
  const { db } = ctx.database;
  const [conversation] = await db
    .select()
    .from(chatConversations)
    .where(
      and(eq(chatConversations.workspaceId, workspaceId), eq(chatConversations.id, conversationId)),
    );
  if (!conversation) throw refuse('conversation_not_found');
  const line = await lineOf(db, ctx.config, workspaceId);
  // A thread runs on one number: after a reconnect to another, its contact would get the
  // reply from a stranger (and outside that number's 24-hour window).
  if (!line || line.phoneNumberId !== conversation.phoneNumberId) {
    throw refuse('chat_not_connected');
  }
  const externalId = await post(ctx, line, conversation.peer, text);
  return db.transaction(async (tx) => {
    const [reply] = await tx
      .insert(chatMessages)
      .values({
        workspaceId,
        conversationId,
        direction: 'out',
        externalId,
        type: 'text',
        content: text,
        sentAt: sql`now()`,
        status: 'accepted',
        senderUserId: actor.userId,
      })
      .returning();
    await tx
      .update(chatConversations)
      .set({ lastMessageAt: sql`greatest(${chatConversations.lastMessageAt}, now())` })
      .where(
        and(
          eq(chatConversations.workspaceId, workspaceId),
          eq(chatConversations.id, conversationId),
        ),
      );
    await applyEarlyStatuses(tx, workspaceId, externalId);
    const [current] = await tx
      .select()
      .from(chatMessages)
      .where(and(eq(chatMessages.workspaceId, workspaceId), eq(chatMessages.id, reply!.id)));
    return current!;
  });
}

/** POSTs the message; answers the platform's message id or refuses with upstream_failed. */
async function post(ctx: Context, line: ChatLine, to: string, body: string): Promise<string> {
  const result = await fetchOutbound(ctx.config, {
    url: `${ctx.config.chat.graphUrl}/${encodeURIComponent(line.phoneNumberId)}/messages`,
    method: 'POST',
    headers: { authorization: `Bearer ${line.accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to,
      type: 'text',
      text: { preview_url: false, body },
    }),
    timeoutMs: SEND_TIMEOUT_MS,
    maxBytes: ANSWER_MAX_BYTES,
    signal: ctx.signal,
  });
  if (result.kind !== 'answered') {
    const problem = describeOutcome(result);
    ctx.log.warn({ outcome: result.kind, problem }, 'chat send: the platform did not answer');
    throw refuse('upstream_failed', { code: null, title: 'the platform did not answer' });
  }
  const answer = answerJson(result) as (PlatformError & { messages?: { id?: string }[] }) | null;
  const id = answer?.messages?.[0]?.id;
  const ok = result.status >= 200 && result.status < 300;
  if (ok && typeof id === 'string' && id) return id;
  const error = answer?.error;
  ctx.log.warn({ status: result.status, code: error?.code }, 'chat send refused by the platform');
  throw refuse('upstream_failed', {
    code: typeof error?.code === 'number' ? error.code : null,
    title: error?.error_user_title ?? error?.message ?? `HTTP ${result.status}`,
  });
}
