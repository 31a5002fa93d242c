// The chat plugin (SPEC 2.11, 4.3, 6): conversations with contacts over a messaging
// platform — its webhook pair, replies, delivery statuses and media (docs/chat.md).
import { definePlugin, registerChannel } from '../../src/plugin-sdk/index.js';
import { chatContactData } from './contact-data.js';
import { CHAT_EVENTS, CHAT_SUBJECT_KEY } from './events.js';
import { chatSweeps } from './inbound.js';
import { mediaJob } from './media.js';
import { mediaRoute } from './media-route.js';
import { webhookRoutes } from './webhook.js';
import './graph.js';

/** Connecting the workspace to its own number (chatConnect, chatDisconnect). */
export const MANAGE_CHAT = 'manage_chat';

// A contact's platform id (its `wa_id`): it arrives from the platform, never from the graph.
registerChannel({ name: 'chat', writable: false });

const conflict = (message: string) => ({ code: 'CONFLICT' as const, message });

export default definePlugin({
  id: 'chat',
  // Tokens may be narrowed to chat:read / chat:write; the media route needs chat:read.
  areas: ['chat'],
  routeArea: 'chat',
  capabilities: [MANAGE_CHAT],
  roles: { admin: [MANAGE_CHAT] },
  events: CHAT_EVENTS,
  eventSubjectKey: CHAT_SUBJECT_KEY,
  // Conversations reference contacts: erased with one, moved to a merge's target.
  contactData: chatContactData,
  reasons: {
    message_content_required: { code: 'VALIDATION', message: 'a message needs text' },
    conversation_not_found: { code: 'NOT_FOUND', message: 'conversation not found' },
    upstream_failed: conflict('the messaging platform did not accept the message'),
    chat_not_connected: conflict("the workspace does not send from this conversation's number"),
    chat_credentials_key_unset: conflict(
      'SVC_CHAT_CREDENTIALS_KEY is unset: no access token can be stored',
    ),
    chat_number_taken: conflict('another workspace is connected to that number'),
    chat_number_invalid: {
      code: 'VALIDATION',
      message: 'a phone number id is the platform’s id for the number: digits only',
    },
    chat_token_required: { code: 'VALIDATION', message: 'an access token is required' },
  },
  routes: [...webhookRoutes, mediaRoute],
  sweeps: chatSweeps,
  // Inbound media downloads (docs/chat.md "Media").
  jobs: [mediaJob],
});
