import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  Agent,
  request,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { PluginDefinition } from '../../src/plugin-host/definition.js';
import { lifecycle } from '../fixtures/plugins/probe/index.js';
import { fixturePluginsDir } from '../support/env.js';
import { startTestService, type TestService } from '../support/service.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** Whether the request went over a connection an earlier request had used. */
  reusedSocket: boolean;
  at: number;
}

interface Sent {
  /** Resolves (with the time) once the server has the request: it answered 100 Continue. */
  accepted: Promise<number>;
  answer: Promise<Answer>;
}

/** Reads `res` to its end as the JSON answer to `req`, timed when the last byte came. */
function readAnswer(req: ClientRequest, res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    res.once('error', reject);
    res.once('end', () =>
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: JSON.parse(text) as unknown,
        reusedSocket: req.reusedSocket,
        at: performance.now(),
      }),
    );
  });
}

/**
 * POSTs a graph operation with `Expect: 100-continue`. Node answers 100 Continue as it
 * hands the request to the service, so `accepted` tells the test, without guessing, that
 * the request is running on the server.
 */
function sendGraph(svc: TestService, query: string, agent: Agent | false = false): Sent {
  const url = svc.url;
  const body = JSON.stringify({ query });
  let accept!: (at: number) => void;
  let refuse!: (error: unknown) => void;
  const accepted = new Promise<number>((resolve, reject) => {
    accept = resolve;
    refuse = reject;
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    const req = request(
      `${url}/api/graphql`,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          expect: '100-continue',
          ...svc.adminHeaders,
        },
      },
      (res) => void readAnswer(req, res).then(resolve, reject),
    );
    req.once('continue', () => {
      accept(performance.now());
      req.end(body);
    });
    req.once('error', (error) => {
      refuse(error);
      reject(error);
    });
    req.flushHeaders();
  });
  return { accepted, answer };
}

function getJson(url: string, path: string, agent: Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { agent }, (res) => {
      void readAnswer(req, res).then(resolve, reject);
    });
    req.once('error', reject);
    req.end();
  });
}

/** Answers `connected`, or the error code a new TCP connection to the service gets. */
function tryConnect(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** The probe plugin's definition, whose stop the tests watch (and restore afterwards). */
function probeDefinition(svc: TestService): PluginDefinition {
  const definition = svc.service.plugins.find((p) => p.manifest.id === 'probe')?.definition;
  if (!definition) throw new Error('the probe plugin is not loaded');
  return definition;
}

function startProbeService(env: Record<string, string>): Promise<TestService> {
  return startTestService({ env, plugins: { dir: fixturePluginsDir }, listen: true });
}

describe('a shutdown while requests finish within SVC_SHUTDOWN_GRACE', () => {
  const waitMs = 1500;
  let svc: TestService;
  let agent: Agent;
  let originalStop: PluginDefinition['stop'];
  let stoppedAt = 0;
  let stopsBefore = 0;
  let acceptedAt = 0;
  let shutdownStartedAt = 0;
  let shutdownTook = 0;
  let long: Answer;
  let short: Answer;
  let readyWhileDraining: Answer;
  let connectWhileDraining = '';

  beforeAll(async () => {
    svc = await startProbeService({
      SVC_SHUTDOWN_GRACE: '10s',
      SVC_SHUTDOWN_CANCEL_GRACE: '10s',
      SVC_SHUTDOWN_STOP_GRACE: '10s',
    });
    const definition = probeDefinition(svc);
    originalStop = definition.stop;
    definition.stop = async function () {
      stoppedAt = performance.now();
      await originalStop?.call(this);
    };
    stopsBefore = lifecycle.filter((step) => step === 'stop').length;

    // A keep-alive connection that stays open through the drain, for a readiness check.
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const longRequest = sendGraph(svc, `{ probeWait(ms: ${waitMs}) }`);
    const shortRequest = sendGraph(svc, '{ probeWait(ms: 100) }', agent);
    acceptedAt = await longRequest.accepted;
    await shortRequest.accepted;

    shutdownStartedAt = performance.now();
    const shutdown = svc.service.shutdown().then(() => performance.now() - shutdownStartedAt);
    connectWhileDraining = await tryConnect(svc.url);
    short = await shortRequest.answer;
    readyWhileDraining = await getJson(svc.url, '/api/readyz', agent);
    long = await longRequest.answer;
    shutdownTook = await shutdown;
  });

  afterAll(async () => {
    agent.destroy();
    probeDefinition(svc).stop = originalStop;
    await svc.stop();
  });

  test('a running request finishes and gets its answer', () => {
    expect(long.status).toBe(200);
    expect(long.body).toEqual({ data: { probeWait: `waited ${waitMs}` } });
    expect(short.body).toEqual({ data: { probeWait: 'waited 100' } });
  });

  test('new connections are refused once shutdown starts', () => {
    expect(connectWhileDraining).toBe('ECONNREFUSED');
  });

  test('readiness answers 503 shutting down on a connection kept open while draining', () => {
    expect(readyWhileDraining.reusedSocket).toBe(true);
    expect(readyWhileDraining.status).toBe(503);
    expect(readyWhileDraining.body).toEqual({ status: 'shutting down' });
  });

  test('plugins stop only after the running requests ended', () => {
    expect(lifecycle.filter((step) => step === 'stop').length).toBe(stopsBefore + 1);
    // The request's resolver started after the client saw 100 Continue; a timer may fire a
    // few milliseconds early by the loop's cached clock.
    expect(stoppedAt - acceptedAt).toBeGreaterThanOrEqual(waitMs - 50);
    expect(stoppedAt).toBeGreaterThan(shutdownStartedAt);
  });

  test('shutdown ends once the requests are done instead of waiting out the graces', () => {
    const left = waitMs - (shutdownStartedAt - acceptedAt);
    expect(shutdownTook).toBeGreaterThanOrEqual(left - 50);
    expect(shutdownTook).toBeLessThan(left + 3000);
  });
});

describe('a shutdown while a request outlives SVC_SHUTDOWN_GRACE', () => {
  let svc: TestService;
  let answer: Answer;
  let answeredAfter = 0;
  let shutdownTook = 0;

  beforeAll(async () => {
    svc = await startProbeService({
      SVC_SHUTDOWN_GRACE: '300ms',
      SVC_SHUTDOWN_CANCEL_GRACE: '10s',
      SVC_SHUTDOWN_STOP_GRACE: '10s',
    });
    const slow = sendGraph(svc, '{ probeSlow }');
    await slow.accepted;
    const started = performance.now();
    const shutdown = svc.service.shutdown().then(() => performance.now() - started);
    answer = await slow.answer;
    answeredAfter = answer.at - started;
    shutdownTook = await shutdown;
  });

  afterAll(() => svc.stop());

  test('the request is cancelled after the grace and answers within SVC_SHUTDOWN_CANCEL_GRACE', () => {
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: { probeSlow: 'cancelled' } });
    expect(answeredAfter).toBeGreaterThanOrEqual(250);
    expect(answeredAfter).toBeLessThan(300 + 3000);
  });

  test('the operator log says requests were cancelled', () => {
    expect(svc.lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        running: 1,
        msg: 'cancelling requests still running',
      }),
    );
  });

  test('shutdown ends once the cancelled request answered', () => {
    expect(shutdownTook).toBeLessThan(300 + 3000);
  });
});

describe('a shutdown where nothing stops when asked', () => {
  const graceMs = 400;
  let svc: TestService;
  let originalStop: PluginDefinition['stop'];
  let outcome: unknown;
  let closedAfter = 0;
  let shutdownTook = 0;

  beforeAll(async () => {
    svc = await startProbeService({
      SVC_SHUTDOWN_GRACE: `${graceMs}ms`,
      SVC_SHUTDOWN_CANCEL_GRACE: `${graceMs}ms`,
      SVC_SHUTDOWN_STOP_GRACE: `${graceMs}ms`,
    });
    const definition = probeDefinition(svc);
    originalStop = definition.stop;
    definition.stop = () => new Promise<void>(() => {});
    // probeWait ignores cancellation: only closing its connection ends it.
    const stuck = sendGraph(svc, '{ probeWait(ms: 2000) }');
    await stuck.accepted;
    const started = performance.now();
    const shutdown = svc.service.shutdown().then(() => performance.now() - started);
    outcome = await stuck.answer.then(
      (answer) => answer,
      (error: NodeJS.ErrnoException) => error.code,
    );
    closedAfter = performance.now() - started;
    shutdownTook = await shutdown;
  });

  afterAll(async () => {
    probeDefinition(svc).stop = originalStop;
    await svc.stop();
  });

  test('the connection of a request that ignores cancellation closes after both request graces', () => {
    expect(outcome).toBe('ECONNRESET');
    expect(closedAfter).toBeGreaterThanOrEqual(2 * graceMs - 50);
    expect(closedAfter).toBeLessThan(2 * graceMs + 2000);
  });

  test('the three graces run one after another and shutdown takes no longer than their sum', () => {
    expect(shutdownTook).toBeGreaterThanOrEqual(3 * graceMs - 50);
    expect(shutdownTook).toBeLessThan(3 * graceMs + 2000);
    expect(svc.lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        plugin: 'probe',
        msg: 'plugin did not stop within the stop grace',
      }),
    );
  });
});
