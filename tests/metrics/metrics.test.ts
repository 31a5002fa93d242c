// GET /metrics on SVC_METRICS_ADDR (docs/operations.md "Metrics"), read back with a real
// Prometheus text-format parser.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, test } from '@jest/globals';
import { sql } from 'drizzle-orm';
import { LABEL_VALUES_MAX, OTHER, scrape } from '../../src/metrics/registry.js';
import { parseScrape, sample, scrapeMetrics } from '../support/prometheus.js';
import { startTestService, useTestService } from '../support/service.js';
import { CREATE_TASK } from '../support/tasks.js';

const ME = 'query Me { me { id } }';

describe('the metrics listener', () => {
  const service = useTestService({
    env: { SVC_METRICS_ADDR: '127.0.0.1:9464', SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' },
    // The public port is compared with the metrics listener's: both are sockets.
    listen: true,
  });

  test('serves /metrics on its own port, and the public port does not', async () => {
    const svc = service();
    expect(svc.service.metricsUrl).not.toBeNull();
    expect(svc.service.metricsUrl).not.toBe(svc.url);
    expect((await fetch(`${svc.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${svc.service.metricsUrl}/other`)).status).toBe(404);
    const families = await scrapeMetrics(svc.service.metricsUrl!);
    // prom-client's process figures: memory and event-loop delay.
    expect(Number(sample(families, 'process_resident_memory_bytes')?.value)).toBeGreaterThan(0);
    expect(families.get('nodejs_eventloop_lag_p99_seconds')?.type).toBe('GAUGE');
    expect(Number(sample(families, 'svc_db_pool_connections')?.value)).toBe(10);
    for (const name of [
      'svc_db_gate_running',
      'svc_db_gate_waiting',
      'svc_db_gate_callers_waiting',
      'svc_db_gate_longest_queue',
      'svc_db_gate_transactions_waiting',
      'svc_event_bus_subscribers',
    ]) {
      expect(families.get(name)?.type).toBe('GAUGE');
    }
  });

  test('operations by name and outcome, their latency, refusals by reason', async () => {
    const svc = service();
    expect((await svc.graph(ME)).body.errors).toBeUndefined();
    const refused = await svc.graph('query Bad($id: UUID!) { contact(id: $id) { id } }', {
      id: 'x',
    });
    expect(refused.body.errors?.[0]?.extensions.reason).toBe('value_malformed');
    const families = await scrapeMetrics(svc.service.metricsUrl!);
    const ok = sample(families, 'svc_graph_operations_total', {
      operation: 'Me',
      type: 'query',
      outcome: 'ok',
    });
    expect(Number(ok?.value)).toBe(1);
    const bad = sample(families, 'svc_graph_operations_total', {
      operation: 'Bad',
      outcome: 'refused',
    });
    expect(Number(bad?.value)).toBe(1);
    const latency = sample(families, 'svc_graph_operation_duration_seconds', { operation: 'Me' });
    expect(families.get('svc_graph_operation_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(Number(latency?.count)).toBe(1);
    expect(Number(latency?.buckets?.['+Inf'])).toBe(1);
    const reason = sample(families, 'svc_graph_refusals_total', {
      code: 'VALIDATION',
      reason: 'value_malformed',
    });
    expect(Number(reason?.value)).toBeGreaterThanOrEqual(1);
    const answered = sample(families, 'svc_http_requests_total', { route: 'graph', status: '2xx' });
    expect(Number(answered?.value)).toBeGreaterThanOrEqual(1);
  });

  test('operation names past the bound fold into one label value', async () => {
    const svc = service();
    for (let i = 0; i < LABEL_VALUES_MAX + 20; i += 1) {
      const { body } = await svc.graph(`query Name${i} { version }`);
      expect(body.errors).toBeUndefined();
    }
    const families = await scrapeMetrics(svc.service.metricsUrl!);
    const names = new Set(
      families.get('svc_graph_operation_duration_seconds')?.metrics.map((m) => m.labels?.operation),
    );
    expect(names.size).toBeLessThanOrEqual(LABEL_VALUES_MAX + 1);
    expect(names.has(OTHER)).toBe(true);
    expect(
      Number(sample(families, 'svc_graph_operation_duration_seconds', { operation: OTHER })?.count),
    ).toBeGreaterThanOrEqual(20);
  });

  test('webhook outbox depth: deliveries pending and the age of the oldest', async () => {
    const svc = service();
    const db = svc.db.database.db;
    expect(
      (await svc.graph(CREATE_TASK, { input: { title: 'An event' } })).body.errors,
    ).toBeUndefined();
    const [event] = (await db.execute(
      sql`select id from events where workspace_id = ${svc.workspace.id} order by at desc limit 1`,
    )) as unknown as { id: string }[];
    const [hook] = (await db.execute(
      sql`insert into webhooks (workspace_id, url, events, secret, created_by)
          values (${svc.workspace.id}, 'http://127.0.0.1:9/h', '{task.created}', 's', ${svc.admin.id})
          returning id`,
    )) as unknown as { id: string }[];
    // Due in an hour, so no worker takes it while the test reads the gauges.
    await db.execute(sql`insert into webhook_deliveries
        (workspace_id, webhook_id, event_id, next_attempt_at, created_at)
        values (${svc.workspace.id}, ${hook!.id}, ${event!.id}, now() + interval '1 hour',
          now() - interval '30 seconds')`);
    const families = await scrapeMetrics(svc.service.metricsUrl!);
    expect(Number(sample(families, 'svc_webhook_outbox_pending')?.value)).toBe(1);
    expect(
      Number(sample(families, 'svc_webhook_outbox_oldest_seconds')?.value),
    ).toBeGreaterThanOrEqual(30);
  });
});

describe('webhook deliveries and jobs by kind', () => {
  let receiver: Server;
  afterAll(() => new Promise((resolve) => receiver?.close(resolve)));

  test('a delivery counts its outcome, and its job is claimed, succeeds and is timed', async () => {
    let delivered: () => void = () => {};
    const hit = new Promise<void>((resolve) => (delivered = resolve));
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200).end('ok');
        delivered();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const svc = await startTestService({ env: { SVC_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' } });
    const kind = { kind: 'webhooks.delivery' };
    const before = parseScrape(await scrape());
    const figure = (families: typeof before, name: string, labels = kind) =>
      Number(sample(families, name, labels)?.value ?? 0);
    try {
      const created = await svc.graph(
        'mutation ($url: String!) { createWebhook(url: $url, events: ["task.created"]) { secret } }',
        { url },
      );
      expect(created.body.errors).toBeUndefined();
      expect(
        (await svc.graph(CREATE_TASK, { input: { title: 'Counted' } })).body.errors,
      ).toBeUndefined();
      await hit;
    } finally {
      // Shutdown waits for the job in flight: its outcome is counted when it returns.
      await svc.stop();
    }
    const after = parseScrape(await scrape());
    const delta = (name: string, labels = kind) =>
      figure(after, name, labels) - figure(before, name, labels);
    expect(delta('svc_webhook_delivery_attempts_total', { outcome: 'delivered' } as never)).toBe(1);
    expect(delta('svc_jobs_claimed_total')).toBe(1);
    expect(delta('svc_jobs_succeeded_total')).toBe(1);
    expect(delta('svc_jobs_retried_total')).toBe(0);
    expect(figure(after, 'svc_jobs_in_flight')).toBe(0);
    const timed = (families: typeof before) =>
      Number(sample(families, 'svc_job_duration_seconds', kind)?.count ?? 0);
    expect(timed(after) - timed(before)).toBe(1);
  });
});
