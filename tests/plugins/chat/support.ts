// What the chat plugin's tests share: a service wired to a fake platform on loopback.
import {
  postWebhook,
  startChatPlatform,
  type ChatPlatform,
  type SendRequest,
  type WebhookPayload,
} from '../../support/chat-platform.js';
import {
  startTestService,
  type TestService,
  type TestServiceOptions,
} from '../../support/service.js';

export const APP_SECRET = 'chat-app-secret';
export const VERIFY_TOKEN = 'chat-verify-token';
/** The environment's number: it serves the test service's one workspace. */
export const NUMBER = '1000200030004000';

export interface ChatHarness {
  svc: TestService;
  platform: ChatPlatform;
  webhookUrl: string;
  /** Sends a request to the service in-process (`svc.request`), for postWebhook's `via`. */
  via: SendRequest;
  /** Posts a payload signed as the platform signs it. */
  deliver(payload: WebhookPayload | string): Promise<{ status: number; text: string }>;
  stop(): Promise<void>;
}

export async function startChatHarness(
  options: { env?: Record<string, string> } & Omit<TestServiceOptions, 'env'> = {},
): Promise<ChatHarness> {
  const platform = await startChatPlatform();
  const svc = await startTestService({
    ...options,
    plugins: {},
    env: {
      SVC_CHAT_APP_SECRET: APP_SECRET,
      SVC_CHAT_VERIFY_TOKEN: VERIFY_TOKEN,
      SVC_CHAT_ACCESS_TOKEN: platform.accessToken,
      SVC_CHAT_PHONE_NUMBER_ID: NUMBER,
      SVC_CHAT_GRAPH_URL: platform.graphUrl,
      ...options.env,
    },
  });
  const webhookUrl = `${svc.origin}/api/plugins/chat/webhook`;
  const via: SendRequest = (url, init) => svc.request(url, init);
  return {
    svc,
    platform,
    webhookUrl,
    via,
    deliver: (payload) => postWebhook(webhookUrl, payload, { appSecret: APP_SECRET, via }),
    async stop() {
      await svc.stop();
      await platform.close();
    },
  };
}
