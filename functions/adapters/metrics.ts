import { Metrics as PowertoolsMetrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricName } from '../core/metric-names';
import type { Metrics } from '../core/ports';

export interface MetricSample {
  name: MetricName;
  dimensions: Record<string, string>;
  value: number;
}

/** The metrics port in process: the embedded stack's counters, readable by tests, the admin route and at shutdown. */
export function memoryMetrics(): Metrics & { snapshot(): MetricSample[] } {
  const counts = new Map<string, MetricSample>();
  return {
    count(name, dimensions, value = 1) {
      const sorted = Object.fromEntries(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)));
      const key = `${name}${JSON.stringify(sorted)}`;
      const sample = counts.get(key) ?? { name, dimensions: sorted, value: 0 };
      sample.value += value;
      counts.set(key, sample);
    },
    gauge(name, dimensions, value) {
      const sorted = Object.fromEntries(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)));
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
  metrics = new PowertoolsMetrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'toolrunner', serviceName: 'toolrunner' }),
): Metrics {
  return {
    count(name, dimensions, value = 1) {
      const single = metrics.singleMetric();
      single.addDimensions(dimensions);
      single.addMetric(name, MetricUnit.Count, value);
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
