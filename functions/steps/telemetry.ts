import type { OperationRecord, Outcome, RunRecord } from '../core/model';
import type { AttemptSpanStart, Deps } from '../core/ports';
import { replaySafe, upstreamStatusOf } from '../core/record-predicates';
import { attemptDecisions } from '../core/span-attributes';
import type { ToolSpec } from '../core/tool-spec';

/**
 * One attempt, in an `execute_tool` span when telemetry is configured; the attempt runs the same either way.
 * `run`: the run as the step just read it (a fresh attempt's re-check); else the one this process last
 * admitted a call into, so the span says the budget left without a read of its own.
 */
export function tracedAttempt<T extends { outcome: Outcome; call: { latencyMs: number; upstreamStatus?: number } }>(
  deps: Pick<Deps, 'telemetry' | 'recentRuns'>,
  tool: ToolSpec,
  op: OperationRecord,
  attempt: number,
  run: () => Promise<T>,
  knownRun?: RunRecord,
): Promise<T> {
  if (!deps.telemetry) return run();
  const start: AttemptSpanStart = {
    toolName: tool.name,
    callId: op.callId,
    operationId: op.operationId,
    runId: op.runId,
    attempt,
    risk: tool.risk,
    idempotencyKeySent: tool.supportsIdempotency,
    replaySafe: replaySafe(tool),
    ...attemptDecisions(op, knownRun ?? deps.recentRuns?.get(op.runId)),
    traceparent: op.traceparent,
  };
  return deps.telemetry.attemptSpan(start, run, (r) => ({
    outcome: r.outcome,
    upstreamStatus: r.call.upstreamStatus ?? upstreamStatusOf(r.outcome),
    latencyMs: r.call.latencyMs,
  }));
}
