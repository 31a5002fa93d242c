// OpenTelemetry traces (docs/operations.md "Traces"), off unless an OTLP endpoint is set.
// The official SDK does the work: its tracer provider, batch processor, OTLP/HTTP exporter,
// AsyncLocalStorage context manager and W3C trace-context propagator; envelop's plugin
// makes the operation spans. What the code adds are spans at the few places work runs
// (a request, a statement through the gate, a job attempt, an outbound call), each behind
// `tracingOn()`, so a process without an endpoint pays one boolean test per place.
import {
  context,
  propagation,
  ROOT_CONTEXT,
  trace,
  SpanKind,
  SpanStatusCode,
  type Context as OtelContext,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { Plugin } from 'graphql-yoga';
import type * as Sdk from '@opentelemetry/sdk-trace';
import type { Sampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

let tracer: Tracer | null = null;
let provider: TracerProvider | null = null;
/** envelop's operation-span plugin, loaded with the SDK. */
let operationSpans: Plugin | null = null;

/** Whether this process exports traces; every hook tests it first. */
export function tracingOn(): boolean {
  return tracer !== null;
}

/** The provider while tracing is on. */
export function tracerProvider(): TracerProvider | null {
  return provider;
}

/**
 * envelop's OpenTelemetry plugin while tracing is on: each operation's span, named by its
 * type and name, the document as an attribute unless it carries inline values.
 */
export function operationSpansPlugin(): Plugin | null {
  return operationSpans;
}

export interface Tracing {
  /** Exports what is left and turns tracing off. */
  shutdown(): Promise<void>;
}

/**
 * The SDK, the exporter and envelop's span plugin, loaded only when tracing is turned on:
 * a process without an endpoint never loads them (about 20 MB of resident memory).
 */
async function loadSdk() {
  // One after another: they share modules, and jest's ESM loader fails to link a module
  // two dynamic imports reach at once.
  const hooks = await import('@opentelemetry/context-async-hooks');
  const core = await import('@opentelemetry/core');
  const exporter = await import('@opentelemetry/exporter-trace-otlp-http');
  const resources = await import('@opentelemetry/resources');
  const sdk = await import('@opentelemetry/sdk-trace');
  const envelop = await import('@envelop/opentelemetry');
  return { hooks, core, exporter, resources, sdk, envelop };
}

/**
 * Turns tracing on for the process (OTel's API is global: one provider at a time). A
 * second service in the same process (tests) shares the first one's; the last shutdown
 * turns it off.
 */
export async function startTracing(
  settings: NonNullable<Config['tracing']>,
  log: Logger,
): Promise<Tracing> {
  users += 1;
  const loaded = provider ? null : await loadSdk();
  if (loaded && !provider) {
    const { hooks, core, exporter, resources, sdk, envelop } = loaded;
    provider = new sdk.TracerProvider({
      sampler: samplerOf(sdk, settings.sampler),
      resource: resources.resourceFromAttributes({ 'service.name': settings.serviceName }),
      spanProcessors: [
        new sdk.BatchSpanProcessor({
          exporter: new exporter.OTLPTraceExporter({
            url: settings.endpoint,
            headers: settings.headers,
          }),
        }),
      ],
    });
    context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    tracer = provider.getTracer('svc');
    // Its resolver spans are left off: they record every resolver's arguments (a password
    // among them) and never end a resolver's span that failed.
    operationSpans = envelop.useOpenTelemetry(
      { resolvers: false, variables: false, result: false },
      provider as never,
      SpanKind.INTERNAL,
      undefined,
      'svc',
    ) as Plugin;
    log.info({ endpoint: settings.endpoint }, 'exporting traces');
  }
  let stopped = false;
  return {
    async shutdown() {
      if (stopped) return;
      stopped = true;
      users -= 1;
      if (users > 0 || !provider) return;
      const ending = provider;
      provider = null;
      tracer = null;
      operationSpans = null;
      try {
        await ending.shutdown();
      } catch (error) {
        log.warn({ err: error }, 'traces could not all be exported');
      }
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

let users = 0;

/** The SDK's sampler for OTEL_TRACES_SAMPLER's name. */
function samplerOf(
  sdk: typeof Sdk,
  { name, ratio }: NonNullable<Config['tracing']>['sampler'],
): Sampler {
  const root = name.endsWith('always_off')
    ? new sdk.AlwaysOffSampler()
    : name.endsWith('traceidratio')
      ? new sdk.TraceIdRatioBasedSampler(ratio)
      : new sdk.AlwaysOnSampler();
  return name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
}

/** The tracer; only called behind `tracingOn()`. */
function active(): Tracer {
  if (!tracer) throw new Error('tracing is off');
  return tracer;
}

/** Ends `span` with the outcome of `work`, recording an error's type (never its text). */
async function endWith<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.setAttribute('error.type', error instanceof Error ? error.name : 'error');
    throw error;
  } finally {
    span.end();
  }
}

/**
 * A span around `work` as the active one, child of `parent` (default: the active context).
 * `work` runs untouched when tracing is off.
 */
export function withSpan<T>(
  name: string,
  options: {
    kind?: SpanKind;
    attributes?: Record<string, string | number>;
    /** The parent context, or `root` for a trace of its own. @default the active context */
    parent?: OtelContext | 'root';
  },
  work: (span: Span | null) => Promise<T>,
): Promise<T> {
  if (!tracer) return work(null);
  const parent = options.parent === 'root' ? ROOT_CONTEXT : (options.parent ?? context.active());
  const span = active().startSpan(
    name,
    { kind: options.kind, attributes: options.attributes },
    parent,
  );
  return context.with(trace.setSpan(parent, span), () => endWith(span, () => work(span)));
}

/** The incoming request's trace context (its `traceparent`), for its server span. */
export function extracted(headers: Record<string, string | string[] | undefined>): OtelContext {
  return propagation.extract(context.active(), headers);
}

/** Adds the active span's `traceparent` to outgoing `headers` (no-op when tracing is off). */
export function injectTraceContext(headers: Record<string, string>): void {
  if (tracer) propagation.inject(context.active(), headers);
}

export { SpanKind };
