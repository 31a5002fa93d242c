// A slow or dead receiver never delays another receiver's deliveries.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startTestService, type TestService } from '../support/service.js';
import { CREATE_TASK } from '../support/tasks.js';

let svc: TestService;
const hanging: ServerResponse[] = [];
let fastHits = 0;
let onFastHit: () => void = () => {};

const slow = createServer((req, res) => {
  req.resume();
  hanging.push(res); // never answered while the test runs
});
const fast = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    fastHits += 1;
    res.writeHead(200).end();
    onFastHit();
  });
});

function listen(server: typeof slow): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

beforeAll(async () => {
  svc = await startTestService({ env: { SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' } });
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  slow.close();
  fast.close();
  await svc.stop();
});

test('deliveries to a fast receiver go out while another receiver hangs on more than every send slot', async () => {
  const [slowUrl, fastUrl] = await Promise.all([listen(slow), listen(fast)]);
  const register =
    'mutation ($u: String!) { createWebhook(url: $u, events: ["task.created"]) { secret } }';
  for (const url of [slowUrl, fastUrl]) {
    const { body } = await svc.graph(register, { u: url });
    expect(body.errors).toBeUndefined();
  }
  const allFast = new Promise<void>((resolve) => {
    onFastHit = () => fastHits >= 20 && resolve();
  });
  // More deliveries to the hanging receiver than one receiver may hold (8 of 16 slots); without a
  // per-receiver cap they would fill every slot until their 10-second timeout.
  const started = Date.now();
  for (let i = 0; i < 20; i += 1) {
    const { body } = await svc.graph(CREATE_TASK, { input: { title: `task ${i}` } });
    expect(body.errors).toBeUndefined();
  }
  await allFast;
  expect(fastHits).toBe(20);
  expect(Date.now() - started).toBeLessThan(8000);
  // The hanging receiver holds its requests open the whole time.
  expect(hanging.length).toBeGreaterThan(0);
}, 30_000);
