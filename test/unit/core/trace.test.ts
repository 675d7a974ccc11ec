import { describe, expect, it } from 'vitest';
import { TraceType } from '../../../functions/core/trace';

describe('trace event types', () => {
  it('include every type the trace contract names', () => {
    const names = Object.values(TraceType) as string[];
    for (const type of [
      'operation.proposed',
      'state.transition',
      'policy.decision',
      'approval.requested',
      'approval.decided',
      'approval.escalated',
      'approval.reminded',
      'attempt.started',
      'attempt.finished',
      'backoff.scheduled',
      'reconcile.started',
      'reconcile.finished',
      'result.recorded',
      'result.reported',
      'result.late',
      'budget.exhausted',
      'run.cancelled',
    ])
      expect(names, type).toContain(type);
    expect(new Set(names).size).toBe(names.length);
  });
});
