import { describe, expect, it, vi } from 'vitest';
import { emfLines, emfMetrics, flushMetrics, type MetricSample } from '../../functions/adapters/metrics';
import { MetricName, metricsOfEvents } from '../../functions/core/metric-names';

/** What CloudWatch extracts from one EMF line: each directive's metrics, with the values of its dimensions. */
function extracted(line: string) {
  const doc = JSON.parse(line) as {
    _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
    [key: string]: unknown;
  };
  return doc._aws.CloudWatchMetrics.flatMap((d) =>
    d.Metrics.map((m) => ({
      name: m.Name,
      namespace: d.Namespace,
      dimensions: Object.fromEntries(d.Dimensions[0].map((k) => [k, doc[k]])),
      value: doc[m.Name],
    })),
  );
}

describe('embedded metric format: a write’s counts in as few lines as CloudWatch allows', () => {
  it('a call that succeeded: its attempt and its outcome in one line, each with its own dimensions', () => {
    const samples = metricsOfEvents('charge_card', [
      { type: 'attempt.started', operationId: 'op_1', callId: 'c', at: 't', seq: 1 },
      { type: 'result.recorded', operationId: 'op_1', callId: 'c', at: 't', seq: 2, detail: { outcome: 'succeeded' } },
    ] as never);
    const lines = emfLines('ns', 'toolrunner', samples, 1);
    expect(lines).toHaveLength(1);
    expect(extracted(lines[0])).toEqual([
      { name: MetricName.attempts, namespace: 'ns', dimensions: { service: 'toolrunner', tool: 'charge_card' }, value: 1 },
      {
        name: MetricName.toolCalls,
        namespace: 'ns',
        dimensions: { outcome: 'succeeded', service: 'toolrunner', tool: 'charge_card' },
        value: 1,
      },
    ]);
  });

  it('counts that need one root key with two values go to separate lines, none lost', () => {
    const samples: MetricSample[] = [
      { name: MetricName.retries, dimensions: { tool: 'a', reason: 'lock_busy' }, value: 1 },
      { name: MetricName.retries, dimensions: { tool: 'a', reason: 'upstream_unavailable' }, value: 1 },
      { name: MetricName.attempts, dimensions: { tool: 'b' }, value: 2 },
    ];
    const lines = emfLines('ns', 'toolrunner', samples, 1);
    const all = lines.flatMap(extracted);
    expect(all).toHaveLength(3);
    expect(all).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: MetricName.retries, dimensions: { service: 'toolrunner', tool: 'a', reason: 'lock_busy' } }),
        expect.objectContaining({
          name: MetricName.retries,
          dimensions: { service: 'toolrunner', tool: 'a', reason: 'upstream_unavailable' },
        }),
        expect.objectContaining({ name: MetricName.attempts, dimensions: { service: 'toolrunner', tool: 'b' }, value: 2 }),
      ]),
    );
    expect(lines.length).toBe(3);
  });
});

describe('EMF counts held until the invocation ends', () => {
  it('the intent write’s and the outcome write’s counts come out as one line at the flush, equal counts summed', () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const metrics = emfMetrics('ns');
      metrics.countAll!([{ name: MetricName.attempts, dimensions: { tool: 't' }, value: 1 }]);
      metrics.countAll!([
        { name: MetricName.toolCalls, dimensions: { tool: 't', outcome: 'succeeded' }, value: 1 },
        { name: MetricName.attempts, dimensions: { tool: 't' }, value: 1 },
      ]);
      expect(written).toEqual([]);
      flushMetrics();
      flushMetrics();
    } finally {
      spy.mockRestore();
    }
    expect(written).toHaveLength(1);
    expect(extracted(written[0])).toEqual([
      { name: MetricName.attempts, namespace: 'ns', dimensions: { service: 'toolrunner', tool: 't' }, value: 2 },
      { name: MetricName.toolCalls, namespace: 'ns', dimensions: { outcome: 'succeeded', service: 'toolrunner', tool: 't' }, value: 1 },
    ]);
  });
});

describe('the rollup the alarms read', () => {
  it('publishes every dimensioned count under `service` alone too, and counts a StatesApiThrottled line so', () => {
    const [line] = emfLines('ns', 'toolrunner', [{ name: MetricName.unknownOutcomes, dimensions: { tool: 'send_email' }, value: 1 }], 1);
    const doc = JSON.parse(line);
    expect(doc._aws.CloudWatchMetrics[0].Dimensions).toEqual([['service', 'tool'], ['service']]);
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      emfMetrics('ns').count(MetricName.statesApiThrottled, { api: 'StartExecution' });
    } finally {
      spy.mockRestore();
    }
    expect(JSON.parse(written[0])).toMatchObject({
      _aws: {
        CloudWatchMetrics: [{ Namespace: 'ns', Dimensions: [['api', 'service'], ['service']], Metrics: [{ Name: 'StatesApiThrottled' }] }],
      },
      api: 'StartExecution',
      service: 'toolrunner',
      StatesApiThrottled: 1,
    });
  });
});
