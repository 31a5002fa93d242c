// The chat plugin's events (docs/chat.md): each names its conversation (`conversation_id`,
// the subject), so `chatConversationEvent` tells a client which thread to refetch and
// webhooks carry the same.
import { recordEvent, type Db } from '../../src/plugin-sdk/index.js';

/** An inbound message was stored (SPEC 6: data carries conversation_id, contact_id, contact_name, external_id, text). */
export const MESSAGE_RECEIVED = 'chat.message.received';
/** A reply's delivery status moved (sent, delivered, read, failed). */
export const MESSAGE_STATUS = 'chat.message.status';
/** A message's media file was downloaded, or given up on. */
export const MEDIA_SETTLED = 'chat.media.settled';

export const CHAT_EVENTS = [MESSAGE_RECEIVED, MESSAGE_STATUS, MEDIA_SETTLED];

/** SPEC 6 names a chat event's subject `conversation_id` (the plugin's eventSubjectKey). */
export const CHAT_SUBJECT_KEY = 'conversation_id';

/** Records a chat event about `conversationId` in the caller's transaction. */
export function recordChatEvent(
  tx: Db,
  event: {
    workspaceId: string;
    name: (typeof CHAT_EVENTS)[number];
    conversationId: string;
    actorUserId?: string | null;
    data: Record<string, unknown>;
  },
): Promise<string> {
  return recordEvent(tx, {
    workspaceId: event.workspaceId,
    name: event.name,
    subjectId: event.conversationId,
    actorUserId: event.actorUserId ?? null,
    data: event.data,
  });
}
