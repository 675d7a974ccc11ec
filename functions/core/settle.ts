import { hashValue } from './canonical';
import { moveTo } from './lifecycle';
import type { OperationRecord, Outcome } from './model';
import type { NewTraceEvent } from './trace';

/** Summary of an outcome fit for the trace: classes, codes and hashes, never the result itself. */
export function outcomeSummary(outcome: Outcome): Record<string, unknown> {
  const summary: Record<string, unknown> = { outcome: outcome.kind };
  if ('code' in outcome) summary.code = outcome.code;
  if (outcome.kind === 'succeeded') summary.resultHash = outcome.result?.sha256 ?? hashValue(null);
  return summary;
}

/** The settled state an authoritative outcome leads to. */
export function settledStateOf(outcome: Outcome): 'recorded' | 'failed_permanent' | 'rejected' | 'budget_exhausted' | 'cancelled' {
  switch (outcome.kind) {
    case 'succeeded':
      return 'recorded';
    case 'failed_retryable':
    case 'failed_permanent':
    case 'outcome_unknown':
      return 'failed_permanent';
    case 'rejected':
      return 'rejected';
    case 'budget_exhausted':
      return 'budget_exhausted';
    case 'cancelled':
      return 'cancelled';
  }
}

/** Records an authoritative outcome: the move to a settled state plus `result.recorded`. */
export function recordOutcome(
  op: OperationRecord,
  outcome: Outcome,
  detail?: Record<string, unknown>,
): { op: OperationRecord; events: NewTraceEvent[] } {
  const moved = moveTo(op, settledStateOf(outcome), { outcome, plan: { next: 'report' } });
  return {
    op: moved.op,
    events: [
      ...moved.events,
      { type: 'result.recorded', operationId: op.operationId, callId: op.callId, detail: { ...outcomeSummary(outcome), ...detail } },
    ],
  };
}

/**
 * A result that arrived after the operation was cancelled: kept on the record (it happened) and traced
 * as `result.late`, but the envelope stays `cancelled`, so it never reaches the closed turn.
 */
export function recordLate(op: OperationRecord, outcome: Outcome, attempt?: number): { op: OperationRecord; events: NewTraceEvent[] } {
  return {
    op: { ...op, lateOutcome: outcome },
    events: [
      {
        type: 'result.late',
        operationId: op.operationId,
        callId: op.callId,
        ...(attempt ? { attempt } : {}),
        detail: outcomeSummary(outcome),
      },
    ],
  };
}
