// The process's metrics (docs/operations.md lists them): one prom-client registry, counted
// wherever the work happens and served by src/metrics/server.ts on SVC_METRICS_ADDR.
// Counting costs a map lookup and an addition, so it runs whether or not anything scrapes;
// figures that need a look at live state (the gate's queues, the outbox) are read at scrape
// time from the sources the service registers.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();

/** Label values a label keeps before it folds every new one into OTHER. */
export const LABEL_VALUES_MAX = 100;
/** The label value of a name past LABEL_VALUES_MAX, or not a name at all. */
export const OTHER = 'other';
const NAME = /^[_A-Za-z][_0-9A-Za-z.:-]{0,63}$/;

/**
 * A label whose values come from outside the code (operation names are the client's):
 * the first LABEL_VALUES_MAX names keep their own value, later ones and anything that is
 * not a short name fold into OTHER, so a client inventing names cannot grow the series.
 */
export function boundedLabel(max = LABEL_VALUES_MAX): (value: string) => string {
  const seen = new Set<string>();
  return (value) => {
    if (seen.has(value)) return value;
    if (!NAME.test(value) || seen.size >= max) return OTHER;
    seen.add(value);
    return value;
  };
}

const seconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const httpRequests = new Counter({
  name: 'svc_http_requests_total',
  help: 'HTTP requests answered on the public port, by route and status class',
  labelNames: ['route', 'status'] as const,
  registers: [registry],
});

export const graphOperations = new Counter({
  name: 'svc_graph_operations_total',
  help: 'Graph operations run, by operation name, type and outcome (ok, refused, unavailable, internal)',
  labelNames: ['operation', 'type', 'outcome'] as const,
  registers: [registry],
});

export const graphDuration = new Histogram({
  name: 'svc_graph_operation_duration_seconds',
  help: 'Time from reading an operation to its result, by operation name',
  labelNames: ['operation'] as const,
  buckets: seconds,
  registers: [registry],
});

export const graphRefusals = new Counter({
  name: 'svc_graph_refusals_total',
  help: 'Errors of refused graph operations, by code and reason',
  labelNames: ['code', 'reason'] as const,
  registers: [registry],
});

export const busNotices = new Counter({
  name: 'svc_event_bus_notices_total',
  help: 'Event notices this process heard on svc_events',
  registers: [registry],
});

export const busLag = new Histogram({
  name: 'svc_event_bus_lag_seconds',
  help: "Time from an event's commit to this process hearing its notice",
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
  registers: [registry],
});

export const webhookDeliveries = new Counter({
  name: 'svc_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts, by outcome (delivered, answered_error, refused, unreachable)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

const jobLabels = ['kind'] as const;
export const jobs = {
  claimed: new Counter({
    name: 'svc_jobs_claimed_total',
    help: 'Job attempts claimed by this process, by kind',
    labelNames: jobLabels,
    registers: [registry],
  }),
  succeeded: new Counter({
    name: 'svc_jobs_succeeded_total',
    help: 'Job attempts that succeeded, by kind',
    labelNames: jobLabels,
    registers: [registry],
  }),
  retried: new Counter({
    name: 'svc_jobs_retried_total',
    help: 'Job attempts that failed and will be retried, by kind',
    labelNames: jobLabels,
    registers: [registry],
  }),
  failed: new Counter({
    name: 'svc_jobs_failed_total',
    help: 'Jobs that failed for good (out of retries), by kind',
    labelNames: jobLabels,
    registers: [registry],
  }),
  inFlight: new Gauge({
    name: 'svc_jobs_in_flight',
    help: 'Job attempts running in this process, by kind',
    labelNames: jobLabels,
    registers: [registry],
  }),
  duration: new Histogram({
    name: 'svc_job_duration_seconds',
    help: 'Time one job attempt ran, by kind',
    labelNames: jobLabels,
    buckets: seconds,
    registers: [registry],
  }),
};

export const workerRuns = new Counter({
  name: 'svc_worker_runs_total',
  help: 'Worker-process runs (an import parsing its file), by worker and outcome',
  labelNames: ['worker', 'outcome'] as const,
  registers: [registry],
});

export const workerDuration = new Histogram({
  name: 'svc_worker_run_duration_seconds',
  help: 'Time one worker-process run took, by worker',
  labelNames: ['worker'] as const,
  buckets: seconds,
  registers: [registry],
});

export const workersRunning = new Gauge({
  name: 'svc_workers_running',
  help: 'Worker processes running now',
  registers: [registry],
});

/** What the gate (src/db/gate.ts) holds and queues, for the gauges below. */
export interface GateFigures {
  running: number;
  waiting: number;
  callersWaiting: number;
  longestQueue: number;
  transactionsWaiting: number;
}

/** Live state read at scrape time; the service adds its own and removes them at shutdown. */
export interface MetricSources {
  poolSize(): number;
  gate(): GateFigures;
  subscribers(): number;
  outbox(): Promise<{ pending: number; oldestSeconds: number }>;
}

const sources = new Set<MetricSources>();

/** Reads `source` at each scrape until the answer is called. */
export function addSources(source: MetricSources): () => void {
  sources.add(source);
  return () => void sources.delete(source);
}

function sum(read: (source: MetricSources) => number): number {
  let total = 0;
  for (const source of sources) total += read(source);
  return total;
}

/** A gauge read at scrape time: summed over the sources unless `read` takes them all. */
function gauge(name: string, help: string, read: (source: MetricSources) => number): void {
  liveGauge(name, help, () => sum(read));
}

function liveGauge(name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

gauge('svc_db_pool_connections', 'Connections the serving pool may open', (s) => s.poolSize());
gauge(
  'svc_db_gate_running',
  "Request statements and transactions holding a pool connection through the callers' gate",
  (s) => s.gate().running,
);
gauge(
  'svc_db_gate_waiting',
  "Request statements waiting in their caller's queue for a turn",
  (s) => s.gate().waiting,
);
gauge(
  'svc_db_gate_callers_waiting',
  'Callers with at least one statement waiting',
  (s) => s.gate().callersWaiting,
);
gauge(
  'svc_db_gate_transactions_waiting',
  'Request transactions waiting for one of those open over every caller to end',
  (s) => s.gate().transactionsWaiting,
);
liveGauge('svc_db_gate_longest_queue', "The longest one caller's queue", () =>
  Math.max(0, ...[...sources].map((source) => source.gate().longestQueue)),
);
gauge('svc_event_bus_subscribers', 'Event streams open in this process', (s) => s.subscribers());

const outboxPending = new Gauge({
  name: 'svc_webhook_outbox_pending',
  help: 'Webhook deliveries waiting to be delivered (all processes, read from the database)',
  registers: [registry],
});
const outboxOldest = new Gauge({
  name: 'svc_webhook_outbox_oldest_seconds',
  help: 'Age of the oldest delivery still waiting (0 when none)',
  registers: [registry],
});

/**
 * The outbox is read once per scrape, both gauges from one statement (every service of
 * a process shares one database). A database out of reach answers NaN rather than the
 * last figure read.
 */
async function collectOutbox(): Promise<void> {
  const [source] = sources;
  if (!source) return;
  try {
    const { pending, oldestSeconds } = await source.outbox();
    outboxPending.set(pending);
    outboxOldest.set(oldestSeconds);
  } catch {
    outboxPending.set(Number.NaN);
    outboxOldest.set(Number.NaN);
  }
}

let defaults = false;

/**
 * Process memory, CPU and event-loop delay (prom-client's default metrics, standard names):
 * their event-loop monitor runs from here on, so only a process that serves metrics has it.
 */
export function collectProcessMetrics(): void {
  if (defaults) return;
  defaults = true;
  collectDefaultMetrics({ register: registry });
}

/** The text a scrape answers (Prometheus text format 0.0.4). */
export async function scrape(): Promise<string> {
  await collectOutbox();
  return registry.metrics();
}
