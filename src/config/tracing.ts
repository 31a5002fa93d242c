// OpenTelemetry's standard variables, read like the service's own (so a .env file counts,
// and `svc check` names a refused value). Only what the traces exporter needs is read.
import type { EnvReader } from './reader.js';
import type { Config } from './types.js';

/** OTEL_EXPORTER_OTLP_HEADERS' form: `key=value,key2=value2`, each part URL-encoded. */
export function parseOtlpHeaders(text: string): Record<string, string> | null {
  const headers: Record<string, string> = {};
  for (const part of text.split(',')) {
    if (part.trim() === '') continue;
    const at = part.indexOf('=');
    if (at <= 0) return null;
    try {
      headers[decodeURIComponent(part.slice(0, at).trim())] = decodeURIComponent(
        part.slice(at + 1).trim(),
      );
    } catch {
      return null;
    }
  }
  return headers;
}

function httpUrl(text: string): URL | null {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/**
 * Traces are exported when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as
 * is, or OTEL_EXPORTER_OTLP_ENDPOINT with `/v1/traces` added, as the specification says),
 * unless OTEL_SDK_DISABLED is `true` or OTEL_TRACES_EXPORTER is `none`. Null: off.
 */
export function readTracing(env: EnvReader): Config['tracing'] {
  const r = env.group('server');
  if (env.text('OTEL_SDK_DISABLED')?.trim().toLowerCase() === 'true') return null;
  const exporter = env.text('OTEL_TRACES_EXPORTER')?.trim().toLowerCase();
  if (exporter === 'none') return null;
  if (exporter !== undefined && exporter !== 'otlp') {
    r.refuse('OTEL_TRACES_EXPORTER', 'must be otlp or none', exporter);
  }
  const protocol =
    env.text('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? env.text('OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined && protocol !== 'http/json') {
    const name = env.isSet('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
      ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
      : 'OTEL_EXPORTER_OTLP_PROTOCOL';
    r.refuse(name, 'must be http/json, the protocol this service exports traces in', protocol);
  }
  const endpoint = tracesEndpoint(env);
  const headersName = env.isSet('OTEL_EXPORTER_OTLP_TRACES_HEADERS')
    ? 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'
    : 'OTEL_EXPORTER_OTLP_HEADERS';
  const headersText = env.text(headersName);
  const headers = headersText === undefined ? {} : parseOtlpHeaders(headersText);
  // Header values are credentials (an API key): both names are secret, never quoted.
  if (!headers) r.refuse(headersName, 'must be key=value pairs separated by commas', headersText);
  if (!endpoint || !headers || (exporter !== undefined && exporter !== 'otlp')) return null;
  const sampler = readSampler(env);
  if (!sampler) return null;
  return {
    endpoint,
    headers,
    serviceName: env.text('OTEL_SERVICE_NAME') ?? 'svc',
    sampler,
  };
}

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

type SamplerName = (typeof SAMPLERS)[number];

/**
 * OTEL_TRACES_SAMPLER and its ratio (OTEL_TRACES_SAMPLER_ARG, 0 to 1, default 1), as the
 * specification names them; the default follows a caller's decision and samples the rest.
 */
function readSampler(env: EnvReader): NonNullable<Config['tracing']>['sampler'] | null {
  const r = env.group('server');
  const given = env.text('OTEL_TRACES_SAMPLER')?.trim().toLowerCase() ?? 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(given)) {
    r.refuse('OTEL_TRACES_SAMPLER', `must be one of ${SAMPLERS.join(', ')}`, given);
    return null;
  }
  const argText = env.text('OTEL_TRACES_SAMPLER_ARG');
  const ratio = argText === undefined ? 1 : Number(argText);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1 || argText?.trim() === '') {
    r.refuse('OTEL_TRACES_SAMPLER_ARG', 'must be a number from 0 to 1', argText);
    return null;
  }
  return { name: given as SamplerName, ratio };
}

function tracesEndpoint(env: EnvReader): string | null {
  const r = env.group('server');
  const own = env.text('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (own !== undefined) {
    if (httpUrl(own)) return own;
    r.refuse('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'must be an http or https URL', own);
    return null;
  }
  const base = env.text('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (base === undefined) return null;
  if (!httpUrl(base)) {
    r.refuse('OTEL_EXPORTER_OTLP_ENDPOINT', 'must be an http or https URL', base);
    return null;
  }
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}
