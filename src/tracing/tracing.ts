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
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

let tracer: Tracer | null = null;
let provider: TracerProvider | null = null;

/** Whether this process exports traces; every hook tests it first. */
export function tracingOn(): boolean {
  return tracer !== null;
}

/** The provider while tracing is on (envelop's plugin takes it). */
export function tracerProvider(): TracerProvider | null {
  return provider;
}

export interface Tracing {
  /** Exports what is left and turns tracing off. */
  shutdown(): Promise<void>;
}

/**
 * Turns tracing on for the process (OTel's API is global: one provider at a time). A
 * second service in the same process (tests) shares the first one's; the last shutdown
 * turns it off.
 */
export function startTracing(settings: NonNullable<Config['tracing']>, log: Logger): Tracing {
  users += 1;
  if (!provider) {
    provider = new TracerProvider({
      sampler: samplerOf(settings.sampler),
      resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: new OTLPTraceExporter({ url: settings.endpoint, headers: settings.headers }),
        }),
      ],
    });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    tracer = provider.getTracer('svc');
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
function samplerOf({ name, ratio }: NonNullable<Config['tracing']>['sampler']): Sampler {
  const root = name.endsWith('always_off')
    ? new AlwaysOffSampler()
    : name.endsWith('traceidratio')
      ? new TraceIdRatioBasedSampler(ratio)
      : new AlwaysOnSampler();
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
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
