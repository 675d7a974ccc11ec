import { describe, expect, it } from 'vitest';
import { boundedDimensions, memoryMetrics } from '../../functions/adapters/metrics';
import { MetricName, UNKNOWN_TOOL_DIMENSION } from '../../functions/core/metric-names';
import type { TraceEvent } from '../../functions/core/trace';
import { countTrace } from '../../functions/steps/metrics';

const refused = (operationId: string): TraceEvent[] => [
  {
    type: 'result.recorded',
    operationId,
    seq: 1,
    at: '2026-01-01T00:00:00.000Z',
    runId: 'run_1',
    detail: { outcome: 'rejected' },
  } as TraceEvent,
];

describe('metric dimensions', () => {
  it('names registered tools only: 300 calls to 300 made-up tools make one series, not 300', () => {
    const metrics = memoryMetrics();
    const tools = new Map([['get_order', {}]]) as never;
    for (let i = 0; i < 300; i++) countTrace({ metrics, tools }, `made_up_tool_${i}`, refused(`op_${i}`));
    countTrace({ metrics, tools }, 'get_order', refused('op_real'));
    expect(metrics.snapshot()).toEqual([
      { name: MetricName.toolCalls, dimensions: { outcome: 'rejected', tool: UNKNOWN_TOOL_DIMENSION }, value: 300 },
      { name: MetricName.toolCalls, dimensions: { outcome: 'rejected', tool: 'get_order' }, value: 1 },
    ]);
  });

  it('counts a value no tool could be named as <unknown> at the adapter too', () => {
    expect(boundedDimensions({ tool: 'get_order', outcome: 'succeeded' })).toEqual({ tool: 'get_order', outcome: 'succeeded' });
    expect(boundedDimensions({ tool: 'a b'.repeat(40) })).toEqual({ tool: UNKNOWN_TOOL_DIMENSION });
    expect(boundedDimensions({ channel: 'webhook' })).toEqual({ channel: 'webhook' });
    const metrics = memoryMetrics();
    metrics.count(MetricName.attempts, { tool: '../../etc' });
    expect(metrics.snapshot()).toEqual([{ name: MetricName.attempts, dimensions: { tool: UNKNOWN_TOOL_DIMENSION }, value: 1 }]);
  });
});
