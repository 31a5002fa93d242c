// The fake messaging platform (tests/support/chat-platform.ts) speaks the Cloud API's shapes:
// the chat plugin's tests lean on it, so its own behaviour is pinned here. No database.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  RECIPIENT_NOT_ALLOWED,
  batch,
  inboundMessage,
  postWebhook,
  signBody,
  startChatPlatform,
  statusUpdate,
  windowClosedError,
  type ChatPlatform,
} from './chat-platform.js';

let platform: ChatPlatform;

beforeAll(async () => {
  platform = await startChatPlatform();
});

afterAll(() => platform.close());

const auth = () => ({ authorization: `Bearer ${platform.accessToken}` });

function sendText(to: string, body: string, headers: Record<string, string> = auth()) {
  return fetch(`${platform.graphUrl}/1234567890/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to,
      type: 'text',
      text: { body },
    }),
  });
}

interface ErrorBody {
  error: Record<string, unknown>;
}

describe('send endpoint', () => {
  test('answers a message id and records the request', async () => {
    platform.reset();
    const response = await sendText('15551234567', 'Hello');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { messages: { id: string }[] };
    expect(body).toEqual({
      messaging_product: 'whatsapp',
      contacts: [{ input: '15551234567', wa_id: '15551234567' }],
      messages: [{ id: expect.stringMatching(/^wamid\.[A-Za-z0-9+/=]+$/) }],
    });
    expect(platform.sent).toEqual([
      expect.objectContaining({
        phoneNumberId: '1234567890',
        authorization: `Bearer ${platform.accessToken}`,
        body: expect.objectContaining({ to: '15551234567', text: { body: 'Hello' } }),
        status: 200,
        messageId: body.messages[0]!.id,
      }),
    ]);
    expect(await platform.waitForSent(1)).toHaveLength(1);
  });

  test('fails the next sends in the platform error shape, then recovers', async () => {
    platform.reset();
    platform.failNextSends(1, RECIPIENT_NOT_ALLOWED);
    const refused = await sendText('15551234567', 'Hello');
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: {
        message: '(#131030) Recipient phone number not in allowed list',
        type: 'OAuthException',
        code: 131030,
        error_data: {
          messaging_product: 'whatsapp',
          details: expect.stringContaining('Recipient phone number not in allowed list'),
        },
        error_user_title: 'Recipient phone number not in allowed list',
        fbtrace_id: expect.any(String),
      },
    });
    expect((await sendText('15551234567', 'Hello')).status).toBe(200);
    expect(platform.sent.map((request) => request.status)).toEqual([400, 200]);
  });

  test('refuses a missing or wrong bearer with code 190', async () => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer nope' }];
    for (const headers of attempts) {
      const response = await sendText('15551234567', 'Hello', headers);
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({
        error: expect.objectContaining({ type: 'OAuthException', code: 190 }),
      });
    }
  });

  test('refuses a malformed body as the platform does', async () => {
    const response = await fetch(`${platform.graphUrl}/1234567890/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth() },
      body: JSON.stringify({ to: '15551234567', type: 'text', text: { body: 'x' } }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorBody).error.code).toBe(100);
  });
});

describe('media', () => {
  test('lookup mints a URL whose download needs the bearer and the token', async () => {
    const bytes = Buffer.from('a tiny jpeg, honestly');
    const id = platform.addMedia({ bytes, mimeType: 'image/jpeg' });
    const lookup = await fetch(`${platform.graphUrl}/${id}`, { headers: auth() });
    expect(lookup.status).toBe(200);
    const meta = (await lookup.json()) as { url: string };
    expect(meta).toEqual({
      messaging_product: 'whatsapp',
      url: expect.stringMatching(new RegExp(`^${platform.origin}/media-download/${id}\\?token=`)),
      mime_type: 'image/jpeg',
      sha256: createHash('sha256').update(bytes).digest('hex'),
      file_size: bytes.length,
      id,
    });
    expect((await fetch(meta.url)).status).toBe(401);
    expect(
      (await fetch(meta.url.replace(/token=.*/, 'token=forged'), { headers: auth() })).status,
    ).toBe(404);
    const download = await fetch(meta.url, { headers: auth() });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/jpeg');
    expect(download.headers.get('content-length')).toBe(String(bytes.length));
    expect(Buffer.from(await download.arrayBuffer())).toEqual(bytes);
    expect(platform.mediaLookups(id)).toBe(1);
    expect(platform.mediaDownloads(id)).toBe(3);
  });

  test('unknown ids answer 404; reportSize overrides file_size', async () => {
    const unknown = await fetch(`${platform.graphUrl}/999`, { headers: auth() });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as ErrorBody).error.code).toBe(100);
    const id = platform.addMedia({ bytes: 'x', mimeType: 'text/plain', reportSize: 200_000_000 });
    const meta = await (await fetch(`${platform.graphUrl}/${id}`, { headers: auth() })).json();
    expect(meta).toMatchObject({ file_size: 200_000_000 });
  });

  test('download URLs expire after mediaUrlTtlMs', async () => {
    const short = await startChatPlatform({ mediaUrlTtlMs: 30, accessToken: 'other' });
    try {
      const id = short.addMedia({ id: 'm1', bytes: 'x', mimeType: 'text/plain' });
      const headers = { authorization: 'Bearer other' };
      const { url } = (await (await fetch(`${short.graphUrl}/${id}`, { headers })).json()) as {
        url: string;
      };
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect((await fetch(url, { headers })).status).toBe(404);
    } finally {
      await short.close();
    }
  });
});

test('setDown answers 503 to sends and media until lifted', async () => {
  const id = platform.addMedia({ bytes: 'x', mimeType: 'text/plain' });
  platform.setDown(true);
  try {
    expect((await sendText('15551234567', 'Hello')).status).toBe(503);
    const lookup = await fetch(`${platform.graphUrl}/${id}`, { headers: auth() });
    expect(lookup.status).toBe(503);
    expect(((await lookup.json()) as ErrorBody).error).toHaveProperty('message');
  } finally {
    platform.setDown(false);
  }
  expect((await sendText('15551234567', 'Hello')).status).toBe(200);
});

describe('webhooks', () => {
  let receiver: Server;
  let url = '';
  const hits: { headers: IncomingHttpHeaders; raw: Buffer }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        hits.push({ headers: req.headers, raw: Buffer.concat(chunks) });
        res.writeHead(200).end('EVENT_RECEIVED');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });

  afterAll(() => new Promise((resolve) => receiver.close(resolve)));

  test('signBody is the HMAC-SHA256 of the raw body', () => {
    const raw = '{"object":"whatsapp_business_account"}';
    expect(signBody('s3cret', raw)).toBe(
      `sha256=${createHmac('sha256', 's3cret').update(raw).digest('hex')}`,
    );
  });

  test('postWebhook signs, overrides or omits the signature', async () => {
    const payload = inboundMessage({
      phoneNumberId: '1234567890',
      from: '15551234567',
      profileName: 'Ada',
      type: 'text',
      text: { body: 'hi' },
    });
    expect(await postWebhook(url, payload, { appSecret: 's3cret' })).toEqual({
      status: 200,
      text: 'EVENT_RECEIVED',
    });
    await postWebhook(url, payload, { appSecret: 's3cret', signature: 'sha256=00' });
    await postWebhook(url, payload, { appSecret: 's3cret', signature: null });
    const [signed, overridden, unsigned] = hits;
    expect(signed!.headers['x-hub-signature-256']).toBe(
      `sha256=${createHmac('sha256', 's3cret').update(signed!.raw).digest('hex')}`,
    );
    expect(JSON.parse(signed!.raw.toString())).toEqual(payload);
    expect(overridden!.headers['x-hub-signature-256']).toBe('sha256=00');
    expect(unsigned!.headers).not.toHaveProperty('x-hub-signature-256');
  });

  test('builders produce the platform JSON and batch merges entries', () => {
    const message = inboundMessage({
      phoneNumberId: '1234567890',
      from: '15551234567',
      profileName: 'Ada',
      id: 'wamid.A',
      timestamp: 1_700_000_000,
      type: 'interactive',
      interactive: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } },
    });
    expect(message).toEqual({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: expect.any(String),
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: {
                  display_phone_number: expect.any(String),
                  phone_number_id: '1234567890',
                },
                contacts: [{ profile: { name: 'Ada' }, wa_id: '15551234567' }],
                messages: [
                  {
                    from: '15551234567',
                    id: 'wamid.A',
                    timestamp: '1700000000',
                    type: 'interactive',
                    interactive: {
                      type: 'button_reply',
                      button_reply: { id: 'yes', title: 'Yes' },
                    },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
    const failed = statusUpdate({
      phoneNumberId: '1234567890',
      messageId: 'wamid.B',
      recipientId: '15551234567',
      status: 'failed',
      errors: [windowClosedError()],
    });
    expect(failed.entry[0]!.changes[0]!.value.statuses).toEqual([
      {
        id: 'wamid.B',
        status: 'failed',
        timestamp: expect.stringMatching(/^\d+$/),
        recipient_id: '15551234567',
        errors: [expect.objectContaining({ code: 131047, title: 'Re-engagement message' })],
      },
    ]);
    const unsupported = inboundMessage({
      phoneNumberId: '1234567890',
      from: '15551234567',
      profileName: 'Ada',
      type: 'unsupported',
    });
    expect(unsupported.entry[0]!.changes[0]!.value.messages![0]!.errors).toEqual([
      expect.objectContaining({ code: 131051 }),
    ]);
    const merged = batch(message, failed, {
      ...unsupported,
      entry: [{ ...unsupported.entry[0]!, id: 'other' }],
    });
    expect(merged.entry.map((entry) => [entry.id, entry.changes.length])).toEqual([
      [message.entry[0]!.id, 2],
      ['other', 1],
    ]);
  });
});
