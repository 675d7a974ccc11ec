import { Metrics as PowertoolsMetrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type MetricName, UNKNOWN_TOOL_DIMENSION } from '../core/metric-names';
import type { Metrics } from '../core/ports';

export interface MetricSample {
  name: MetricName;
  dimensions: Record<string, string>;
  value: number;
}

/** What a registered tool's name looks like (core/tool-spec.ts): the only `tool` values a metric may carry. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The last guard before a dimension becomes a metric: a `tool` value that could not be a registered tool's
 * name (the steps already map unregistered names, steps/metrics.ts) is counted as `<unknown>`.
 */
export function boundedDimensions(dimensions: Record<string, string>): Record<string, string> {
  const tool = dimensions.tool;
  if (tool === undefined || tool === UNKNOWN_TOOL_DIMENSION || TOOL_NAME.test(tool)) return dimensions;
  return { ...dimensions, tool: UNKNOWN_TOOL_DIMENSION };
}

/** The metrics port in process: the embedded stack's counters, readable by tests, the admin route and at shutdown. */
export function memoryMetrics(): Metrics & { snapshot(): MetricSample[] } {
  const counts = new Map<string, MetricSample>();
  return {
    count(name, dimensions, value = 1) {
      const sorted = Object.fromEntries(Object.entries(boundedDimensions(dimensions)).sort(([a], [b]) => a.localeCompare(b)));
      const key = `${name}${JSON.stringify(sorted)}`;
      const sample = counts.get(key) ?? { name, dimensions: sorted, value: 0 };
      sample.value += value;
      counts.set(key, sample);
    },
    gauge(name, dimensions, value) {
      const sorted = Object.fromEntries(Object.entries(boundedDimensions(dimensions)).sort(([a], [b]) => a.localeCompare(b)));
      counts.set(`${name}${JSON.stringify(sorted)}`, { name, dimensions: sorted, value });
    },
    snapshot() {
      return [...counts.values()]
        .map((s) => ({ ...s, dimensions: { ...s.dimensions } }))
        .sort((a, b) => a.name.localeCompare(b.name) || JSON.stringify(a.dimensions).localeCompare(JSON.stringify(b.dimensions)));
    },
  };
}

/**
 * The metrics port on AWS: CloudWatch embedded metric format through Powertools. Each count is a single
 * metric with its own dimensions, written at once, so no flush at the end of an invocation is needed.
 */
export function emfMetrics(
  namespace = process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'toolrunner',
  metrics = new PowertoolsMetrics({ namespace, serviceName: 'toolrunner' }),
): Metrics {
  return {
    // One line of its own, with the `[service]` rollup the alarms read (emfLines).
    count(name, dimensions, value = 1) {
      for (const line of emfLines(namespace, 'toolrunner', [{ name, dimensions: boundedDimensions(dimensions), value }], Date.now()))
        process.stdout.write(`${line}\n`);
    },
    // Held until the invocation ends (flushMetrics), then as few lines as possible: CloudWatch Logs bills
    // every line it ingests, and an inline call's intent and outcome writes would be two.
    countAll(samples) {
      pending.push(...samples.map((sample) => ({ ...sample, dimensions: boundedDimensions(sample.dimensions), namespace })));
      // A process that no invocation wrapper flushes (a long-lived server with EMF on) flushes itself.
      if (!flushTimer) flushTimer = setTimeout(flushMetrics, 1000).unref();
    },
    // A gauge is one datapoint per publication: the alarms and the dashboard read its MAX per period.
    gauge(name, dimensions, value) {
      const single = metrics.singleMetric();
      single.addDimensions(dimensions);
      single.addMetric(name, MetricUnit.Count, value);
    },
  };
}

/** One line for people: `ToolCalls{outcome=succeeded,tool=charge_card} 3`. */
export function formatSample(sample: MetricSample): string {
  const dims = Object.entries(sample.dimensions)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return `${sample.name}{${dims}} ${sample.value}`;
}

let pending: (MetricSample & { namespace: string })[] = [];
let flushTimer: NodeJS.Timeout | undefined;

/** Writes the counts held since the last flush (same metric and dimensions summed), as few EMF lines as fit. */
export function flushMetrics(): void {
  if (flushTimer) clearTimeout(flushTimer);
  flushTimer = undefined;
  const held = pending;
  pending = [];
  const byNamespace = new Map<string, Map<string, MetricSample>>();
  for (const { namespace, ...sample } of held) {
    const sums = byNamespace.get(namespace) ?? new Map<string, MetricSample>();
    const key = `${sample.name}${JSON.stringify(Object.entries(sample.dimensions).sort())}`;
    const sum = sums.get(key);
    if (sum) sum.value += sample.value;
    else sums.set(key, { ...sample });
    byNamespace.set(namespace, sums);
  }
  for (const [namespace, sums] of byNamespace)
    for (const line of emfLines(namespace, 'toolrunner', [...sums.values()], Date.now())) process.stdout.write(`${line}\n`);
}

/**
 * Counts as few embedded-metric-format lines as CloudWatch allows: one document holds one directive per
 * dimension set, each metric's value and each dimension's value once at its root. So two counts that need
 * the same root key with different values (a metric counted twice, a dimension with two values) go to
 * another line. Every metric gets the `service` dimension, as Powertools' own lines have it.
 */
export function emfLines(namespace: string, service: string, samples: readonly MetricSample[], timestamp: number): string[] {
  type Doc = { root: Record<string, string | number>; directives: Map<string, { dims: string[]; metrics: string[] }> };
  const docs: Doc[] = [];
  for (const sample of samples) {
    const dims = { service, ...sample.dimensions };
    const fits = (doc: Doc) => !(sample.name in doc.root) && Object.entries(dims).every(([k, v]) => !(k in doc.root) || doc.root[k] === v);
    let doc = docs.find(fits);
    if (!doc) {
      doc = { root: {}, directives: new Map() };
      docs.push(doc);
    }
    Object.assign(doc.root, dims, { [sample.name]: sample.value });
    const keys = Object.keys(dims).sort();
    const id = keys.join(',');
    const directive = doc.directives.get(id) ?? { dims: keys, metrics: [] };
    directive.metrics.push(sample.name);
    doc.directives.set(id, directive);
  }
  return docs.map((doc) =>
    JSON.stringify({
      _aws: {
        Timestamp: timestamp,
        CloudWatchMetrics: [...doc.directives.values()].map((d) => ({
          Namespace: namespace,
          // Also under `service` alone: one series per name across tools and outcomes, which an alarm can read
          // as a metric (a Metrics Insights query cannot take part in an alarm's math).
          Dimensions: d.dims.length > 1 ? [d.dims, ['service']] : [d.dims],
          Metrics: d.metrics.map((Name) => ({ Name, Unit: 'Count' })),
        })),
      },
      ...doc.root,
    }),
  );
}
