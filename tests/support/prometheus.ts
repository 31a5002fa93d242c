// Reads a scrape with a real Prometheus text-format parser (parse-prometheus-text-format,
// a port of the Prometheus Python client's parser), never with the registry that wrote it.
import { createRequire } from 'node:module';

export interface Sample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}

export interface Family {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  metrics: Sample[];
}

const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (
  text: string,
) => Family[];

/**
 * The families of a scrape, by name. The parser merges a histogram's series into one,
 * whatever their labels (its output follows prom2json, which did the same); read again
 * with their TYPE lines left out, each of `_bucket`, `_sum` and `_count` is a family of
 * its own whose samples keep their labels, and the histogram's series are rebuilt from them.
 */
export function parseScrape(text: string): Map<string, Family> {
  const families = new Map(parse(text).map((family) => [family.name, family]));
  const histograms = [...families.values()].filter((family) => family.type === 'HISTOGRAM');
  if (histograms.length === 0) return families;
  // One family per run of lines: a series' `_bucket` lines after another's `_count` start
  // a family again under the same name.
  const untyped = parse(text.replace(/^# TYPE \S+ histogram$/gm, ''));
  for (const family of histograms) family.metrics = seriesOf(family.name, untyped);
  return families;
}

function seriesOf(name: string, untyped: Family[]): Sample[] {
  const series = new Map<string, Sample>();
  const of = (labels: Record<string, string> = {}) => {
    const { le: _le, ...rest } = labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    let found = series.get(key);
    if (!found) series.set(key, (found = { labels: rest, buckets: {} }));
    return found;
  };
  const samples = (suffix: string) =>
    untyped.filter((family) => family.name === `${name}${suffix}`).flatMap((f) => f.metrics);
  for (const m of samples('_bucket')) of(m.labels).buckets![m.labels?.le ?? ''] = m.value ?? '';
  for (const m of samples('_sum')) of(m.labels).sum = m.value;
  for (const m of samples('_count')) of(m.labels).count = m.value;
  return [...series.values()];
}

/** GETs `url`/metrics and parses it; fails the test on anything but a 200 in text format. */
export async function scrapeMetrics(url: string): Promise<Map<string, Family>> {
  const response = await fetch(`${url}/metrics`);
  if (response.status !== 200) throw new Error(`scrape answered ${response.status}`);
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/plain')) throw new Error(`scrape answered ${type}`);
  return parseScrape(await response.text());
}

/** The sample of `family` whose labels include `labels`. */
export function sample(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): Sample | undefined {
  return families
    .get(name)
    ?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}
