// The chat plugin's graph (SPEC 4.2, the Chat row; 6): conversations with their messages,
// replies, the workspace's connection, and both chat subscriptions.
import {
  builder,
  ContactObject,
  costs,
  eventData,
  limited,
  signedIn,
  STATEMENT,
  subscribeEvents,
  TEXT_MAX,
  WRITE,
  type BusNotice,
} from '../../src/plugin-sdk/index.js';
import {
  conversationMessages,
  findConversation,
  findMessage,
  listConversations,
  listRefusedInbound,
  type ConversationView,
} from './conversations.js';
import { CHAT_EVENTS, MESSAGE_RECEIVED } from './events.js';
import { sendMessage, TEXT_MAX_CHARS } from './send.js';
import { connectWorkspace, disconnectWorkspace } from './settings.js';
import type { ChatMessage, ChatRefusedInbound } from './tables.js';

const readChat = { access: { scope: 'chat:read' } } as const;
const writeChat = { access: { scope: 'chat:write' } } as const;
const manageChat = { access: { scope: 'chat:write', capability: 'manage_chat' } } as const;
const readChatAdmin = { access: { scope: 'chat:read', capability: 'manage_chat' } } as const;

/** A message's media file, as SPEC 2.11's `media` names it. */
interface MediaView {
  state: string;
  mimeType: string | null;
  fileName: string | null;
  bytes: number | null;
  downloadPath: string | null;
}

function mediaOf(message: ChatMessage): MediaView | null {
  if (!message.mediaState) return null;
  return {
    state: message.mediaState,
    mimeType: message.mediaMimeType,
    fileName: message.mediaFileName,
    bytes: message.mediaBytes,
    downloadPath:
      message.mediaState === 'stored'
        ? `/api/plugins/chat/conversations/${message.conversationId}/messages/${message.id}/media`
        : null,
  };
}

const ChatMediaObject = builder.objectRef<MediaView>('ChatMedia').implement({
  description: 'A file a message carries (docs/chat.md, "Media").',
  fields: (t) => ({
    state: t.exposeString('state', {
      description: 'pending, stored, failed or too_large; only stored media downloads.',
    }),
    mimeType: t.exposeString('mimeType', { nullable: true }),
    fileName: t.exposeString('fileName', { nullable: true }),
    bytes: t.exposeInt('bytes', { nullable: true, description: 'The stored size.' }),
    downloadPath: t.exposeString('downloadPath', {
      nullable: true,
      description: 'The media route’s address, once stored.',
    }),
  }),
});

const ChatDeliveryErrorObject = builder
  .objectRef<NonNullable<ChatMessage['statusError']>>('ChatDeliveryError')
  .implement({
    description: 'Why the platform did not deliver a reply, as it explains it.',
    fields: (t) => ({
      code: t.exposeInt('code', { nullable: true }),
      title: t.exposeString('title'),
      details: t.exposeString('details', { nullable: true }),
    }),
  });

export const ChatMessageObject = builder.objectRef<ChatMessage>('ChatMessage').implement({
  description: 'One message of a conversation, from the contact or a reply.',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    conversationId: t.expose('conversationId', { type: 'UUID' }),
    direction: t.exposeString('direction', {
      description: '`in` from the contact, `out` a reply.',
    }),
    type: t.exposeString('type', {
      description:
        'text, image, audio, video, document, sticker, location, contacts, interactive, ' +
        'button, reaction or unsupported.',
    }),
    content: t.exposeString('content', {
      description: 'What a reader shows: the text, a caption, a chosen reply, a place…',
    }),
    sentAt: t.expose('sentAt', { type: 'DateTime' }),
    status: t.exposeString('status', {
      nullable: true,
      description: 'A reply’s delivery: accepted, sent, delivered, read or failed.',
    }),
    statusError: t.expose('statusError', { type: ChatDeliveryErrorObject, nullable: true }),
    media: t.field({ type: ChatMediaObject, nullable: true, resolve: mediaOf }),
  }),
});

const ChatConversationObject = builder.objectRef<ConversationView>('ChatConversation').implement({
  description: 'A thread of messages with one contact.',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    contact: t.field({
      type: ContactObject,
      resolve: (conversation) => ({ id: conversation.contactId, name: conversation.contactName }),
    }),
    lastMessageAt: t.expose('lastMessageAt', { type: 'DateTime' }),
    lastMessage: t.expose('lastMessage', { type: ChatMessageObject, nullable: true }),
    messages: t.field({
      type: [ChatMessageObject],
      description: 'Newest first; `before` pages on from a message.',
      args: {
        first: t.arg.int({ required: false }),
        before: t.arg({ type: 'UUID', required: false }),
      },
      extensions: costs({ cost: STATEMENT }),
      resolve: (conversation, args, ctx) => conversationMessages(ctx, conversation.id, args),
    }),
  }),
});

const ChatRefusedInboundObject = builder
  .objectRef<ChatRefusedInbound>('ChatRefusedInbound')
  .implement({
    description:
      'An inbound message or status the service could not store, and why (docs/chat.md, ' +
      '"Refused items"). The platform was answered 200: it will not deliver it again.',
    fields: (t) => ({
      id: t.expose('id', { type: 'UUID' }),
      kind: t.exposeString('kind', {
        description: '`message`, `status`, or `payload` for the items past a payload’s cap.',
      }),
      platformId: t.exposeString('platformId', {
        description: 'The platform’s id of the item, control characters escaped, cut to 200.',
      }),
      peer: t.exposeString('peer', { description: 'The sender or recipient, likewise.' }),
      reason: t.exposeString('reason', {
        description:
          'text_invalid, text_too_long, value_too_deep, message_incomplete, ' +
          'value_unstorable, payload_too_many_items, or a contact refusal’s reason.',
      }),
      detail: t.exposeString('detail', {
        description: 'Where in the item (`text.body`, `from`), or what more the reason needs.',
      }),
      at: t.expose('createdAt', { type: 'DateTime' }),
    }),
  });

/** What `chatConversationEvent` streams: the thread to refetch, and why. */
interface ConversationEvent {
  conversationId: string;
  name: string;
  at: Date;
}

const ChatConversationEventObject = builder
  .objectRef<ConversationEvent>('ChatConversationEvent')
  .implement({
    description: 'A thread changed; refetch it. No replay after a disconnect.',
    fields: (t) => ({
      conversationId: t.expose('conversationId', { type: 'UUID' }),
      name: t.exposeString('name', {
        description: 'chat.message.received, chat.message.status or chat.media.settled.',
      }),
      at: t.expose('at', { type: 'DateTime' }),
    }),
  });

builder.queryFields((t) => ({
  chatConversations: t.field({
    type: [ChatConversationObject],
    description:
      'The workspace’s conversations, newest activity first, with the contact and the last message.',
    authScopes: readChat,
    args: {
      first: t.arg.int({ required: false }),
      before: t.arg({ type: 'UUID', required: false }),
    },
    resolve: (_root, args, ctx) => listConversations(ctx, args),
  }),
  chatConversation: t.field({
    type: ChatConversationObject,
    description: 'One conversation of the workspace, with its messages.',
    authScopes: readChat,
    args: { id: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => findConversation(ctx, args.id),
  }),
  chatRefusedInbound: t.field({
    type: [ChatRefusedInboundObject],
    description:
      'Inbound items the service could not store, newest first: the newest 1000 of the ' +
      'last 30 days. Admins only (manage_chat).',
    authScopes: readChatAdmin,
    args: { first: t.arg.int({ required: false }) },
    extensions: costs({ cost: STATEMENT }),
    resolve: (_root, args, ctx) => listRefusedInbound(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  chatSendMessage: t.field({
    type: ChatMessageObject,
    description: 'Replies on a conversation through the platform (SPEC 3: delivery status).',
    authScopes: writeChat,
    args: {
      conversationId: t.arg({ type: 'UUID', required: true }),
      text: t.arg.string({ required: true, extensions: limited({ maxLength: TEXT_MAX_CHARS }) }),
    },
    extensions: costs({ cost: WRITE }),
    resolve: (_root, args, ctx) => sendMessage(ctx, args.conversationId, args.text),
  }),
  chatConnect: t.boolean({
    description:
      'Connects the workspace to its own number: inbound payloads for it are routed here, ' +
      'replies go out with its access token, stored sealed (SVC_CHAT_CREDENTIALS_KEY).',
    authScopes: manageChat,
    args: {
      phoneNumberId: t.arg.string({ required: true, extensions: limited({ maxLength: 64 }) }),
      accessToken: t.arg.string({
        required: true,
        extensions: limited({ maxLength: TEXT_MAX.url }),
      }),
    },
    extensions: costs({ cost: WRITE }),
    resolve: async (_root, args, ctx) => {
      const { workspaceId } = signedIn(ctx);
      await connectWorkspace(ctx.database.db, ctx.config, { workspaceId, ...args });
      return true;
    },
  }),
  chatDisconnect: t.boolean({
    description: 'Forgets the workspace’s number and token; false when none was connected.',
    authScopes: manageChat,
    extensions: costs({ cost: WRITE }),
    resolve: (_root, _args, ctx) => disconnectWorkspace(ctx.database.db, signedIn(ctx).workspaceId),
  }),
}));

builder.subscriptionFields((t) => ({
  chatConversationEvent: t.field({
    type: ChatConversationEventObject,
    description:
      'Names the thread that changed (inbound message, delivery status, downloaded file) so ' +
      'a client refetches. Closes after SVC_STREAM_LIFETIME; no replay.',
    authScopes: readChat,
    subscribe: (_root, _args, ctx) =>
      subscribeEvents(
        ctx,
        (notice) => CHAT_EVENTS.includes(notice.name) && notice.subjectId !== null,
      ),
    resolve: (notice: BusNotice) => ({
      conversationId: notice.subjectId!,
      name: notice.name,
      at: notice.at,
    }),
  }),
  chatMessageReceived: t.field({
    type: ChatMessageObject,
    description: 'Arrivals on one open thread, with id, content and sentAt.',
    authScopes: readChat,
    args: { conversationId: t.arg({ type: 'UUID', required: true }) },
    subscribe: (_root, args, ctx) =>
      subscribeEvents(
        ctx,
        (notice) => notice.name === MESSAGE_RECEIVED && notice.subjectId === args.conversationId,
      ),
    resolve: async (notice: BusNotice, _args, ctx) => {
      const data = await eventData(ctx.database.db, notice.workspaceId, notice.id);
      return findMessage(ctx, String(data?.message_id ?? ''));
    },
  }),
}));
