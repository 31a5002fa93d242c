// OpenTelemetry traces (docs/operations.md "Traces") exported as OTLP/HTTP JSON to a real
// receiver on loopback, and a webhook delivery's trace context reaching its receiver.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { tracingOn } from '../../src/tracing/tracing.js';
import { startTestService, type TestService } from '../support/service.js';
import { CREATE_TASK } from '../support/tasks.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

interface Export {
  headers: IncomingHttpHeaders;
  spans: OtlpSpan[];
  serviceName: unknown;
}

/** A collector's OTLP/HTTP endpoint: decodes each JSON export it is sent. */
async function otlpReceiver(): Promise<{ server: Server; url: string; exports: Export[] }> {
  const exports: Export[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: OtlpSpan[] }[];
        }[];
      };
      for (const resource of body.resourceSpans) {
        exports.push({
          headers: req.headers,
          serviceName: resource.resource.attributes.find((a) => a.key === 'service.name')?.value
            .stringValue,
          spans: resource.scopeSpans.flatMap((scope) => scope.spans),
        });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports };
}

const attribute = (span: OtlpSpan, key: string) =>
  Object.values(span.attributes?.find((a) => a.key === key)?.value ?? {})[0];

describe('with an OTLP endpoint', () => {
  let collector: Awaited<ReturnType<typeof otlpReceiver>>;
  let webhookReceiver: Server;
  let hookUrl = '';
  const hits: IncomingHttpHeaders[] = [];
  let delivered: () => void = () => {};
  const hit = new Promise<void>((resolve) => (delivered = resolve));
  let svc: TestService;
  let spans: OtlpSpan[] = [];
  const incomingTrace = '0af7651916cd43dd8448eb211c80319c';

  beforeAll(async () => {
    collector = await otlpReceiver();
    webhookReceiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits.push(req.headers);
        res.writeHead(200).end('ok');
        delivered();
      });
    });
    await new Promise<void>((resolve) => webhookReceiver.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(webhookReceiver.address() as AddressInfo).port}/hook`;
    svc = await startTestService({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k%201',
        OTEL_SERVICE_NAME: 'svc-test',
        SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32',
      },
    });
    expect(tracingOn()).toBe(true);
    const created = await svc.graph(
      'mutation Subscribe($url: String!) { createWebhook(url: $url, events: ["task.created"]) { secret } }',
      { url: hookUrl },
    );
    expect(created.body.errors).toBeUndefined();
    const task = await svc.graph(
      CREATE_TASK.replace('mutation (', 'mutation AddTask('),
      { input: { title: 'Traced' } },
      { ...svc.adminHeaders, traceparent: `00-${incomingTrace}-b7ad6b7169203331-01` },
    );
    expect(task.body.errors).toBeUndefined();
    await hit;
    // Shutdown waits for the delivery job and exports every span still batched.
    await svc.stop();
    expect(tracingOn()).toBe(false);
    spans = collector.exports.flatMap((e) => e.spans);
  });
  afterAll(async () => {
    await new Promise((resolve) => collector.server.close(resolve));
    await new Promise((resolve) => webhookReceiver.close(resolve));
  });

  test('exports to the endpoint with its headers, under the service name', () => {
    expect(collector.exports.length).toBeGreaterThan(0);
    expect(collector.exports[0]?.headers['x-api-key']).toBe('k 1');
    expect(collector.exports[0]?.headers['content-type']).toContain('application/json');
    expect(collector.exports[0]?.serviceName).toBe('svc-test');
  });

  test("a request is one server span named after its operation, continuing the caller's trace", () => {
    const request = spans.find((s) => s.name === 'mutation AddTask');
    expect(request).toBeDefined();
    expect(request?.kind).toBe(2); // SERVER
    expect(request?.traceId).toBe(incomingTrace);
    expect(request?.parentSpanId).toBe('b7ad6b7169203331');
    expect(attribute(request!, 'http.response.status_code')).toBe(200);
    // envelop's operation span, its child, with the operation's name.
    const operation = spans.find(
      (s) => s.parentSpanId === request?.spanId && s.name === 'mutation.AddTask',
    );
    expect(attribute(operation!, 'graphql.execute.operationName')).toBe('AddTask');
  });

  test('the resolver that reached the database has a span, and its SQL statements are children', () => {
    const trace = spans.filter((s) => s.traceId === incomingTrace);
    const resolver = trace.find((s) => s.name === 'Mutation.createTask');
    expect(resolver).toBeDefined();
    const statements = trace.filter((s) => s.parentSpanId === resolver?.spanId);
    expect(statements.length).toBeGreaterThan(0);
    for (const statement of statements) {
      expect(statement.kind).toBe(3); // CLIENT
      expect(attribute(statement, 'db.system.name')).toBe('postgresql');
      expect(String(attribute(statement, 'db.query.text'))).not.toContain('Traced');
    }
    expect(statements.map((s) => s.name)).toContain('INSERT');
  });

  test("a delivery is a job span whose outbound call's traceparent reaches the receiver", () => {
    const job = spans.find((s) => s.name === 'job webhooks.delivery');
    expect(job).toBeDefined();
    expect(job?.parentSpanId ?? '').toBe('');
    const call = spans.find((s) => s.parentSpanId === job?.spanId && s.name === 'POST');
    expect(call?.kind).toBe(3);
    expect(attribute(call!, 'http.response.status_code')).toBe(200);
    expect(hits[0]?.traceparent).toBe(`00-${job?.traceId}-${call?.spanId}-01`);
  });
});

describe('without an endpoint', () => {
  test('tracing stays off and operations run as before', async () => {
    const svc = await startTestService();
    try {
      expect(tracingOn()).toBe(false);
      expect((await svc.graph('query { version }')).body.errors).toBeUndefined();
    } finally {
      await svc.stop();
    }
  });
});
