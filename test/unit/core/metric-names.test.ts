import { describe, expect, it } from 'vitest';
import { memoryMetrics } from '../../../functions/adapters/metrics';
import { MetricName, metricsOfEvents } from '../../../functions/core/metric-names';
import { countTrace } from '../../../functions/steps/metrics';
import type { NewTraceEvent, TraceEvent } from '../../../functions/core/trace';

const ev = (e: NewTraceEvent, seq = 1): TraceEvent => ({ seq, at: '2026-01-01T00:00:00.000Z', runId: 'run_1', ...e });

describe('metrics from committed trace events', () => {
  it('counts calls by outcome, attempts, retries by reason, unknown outcomes, budget stops, replays, conflicts, late results', () => {
    const counts = metricsOfEvents('charge_card', [
      { type: 'attempt.started', attempt: 1 },
      { type: 'backoff.scheduled', attempt: 2, detail: { delaySeconds: 1, reason: 'transient' } },
      { type: 'state.transition', from: 'executing', to: 'outcome_unknown' },
      { type: 'state.transition', from: 'validated', to: 'executing' },
      { type: 'result.recorded', detail: { outcome: 'succeeded' } },
      { type: 'budget.exhausted', detail: { status: 'expired' } },
      { type: 'operation.replayed' },
      { type: 'call.conflict' },
      { type: 'result.late', detail: { outcome: 'succeeded' } },
      { type: 'policy.decision' },
    ]);
    const tool = { tool: 'charge_card' };
    expect(counts).toEqual([
      { name: MetricName.attempts, dimensions: tool, value: 1 },
      { name: MetricName.retries, dimensions: { ...tool, reason: 'transient' }, value: 1 },
      { name: MetricName.unknownOutcomes, dimensions: tool, value: 1 },
      { name: MetricName.toolCalls, dimensions: { ...tool, outcome: 'succeeded' }, value: 1 },
      { name: MetricName.budgetStops, dimensions: { ...tool, status: 'expired' }, value: 1 },
      { name: MetricName.replays, dimensions: tool, value: 1 },
      { name: MetricName.conflicts, dimensions: tool, value: 1 },
      { name: MetricName.lateResults, dimensions: tool, value: 1 },
    ]);
  });

  it('never counts approvals waiting or reviews open from events: those are gauges read from the store', () => {
    const registry = memoryMetrics();
    countTrace({ metrics: registry }, 'charge_card', [
      ev({ type: 'approval.requested' }),
      ev({ type: 'approval.decided', detail: { decision: 'expired' } }),
      ev({ type: 'reconcile.finished', detail: { result: 'needs_review' } }),
    ]);
    expect(registry.snapshot()).toEqual([]);
    registry.gauge(MetricName.approvalsWaiting, {}, 3);
    registry.gauge(MetricName.approvalsWaiting, {}, 2);
    expect(registry.snapshot()).toEqual([{ name: MetricName.approvalsWaiting, dimensions: {}, value: 2 }]);
  });

  it('never lets a failing metrics sink fail the step that committed', () => {
    const broken = {
      count: () => {
        throw new Error('sink down');
      },
      gauge: () => undefined,
    };
    expect(() => countTrace({ metrics: broken }, 't', [ev({ type: 'attempt.started' })])).not.toThrow();
  });
});
