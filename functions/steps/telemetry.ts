import type { OperationRecord, Outcome } from '../core/model';
import type { AttemptSpanStart, Deps } from '../core/ports';
import { replaySafe, upstreamStatusOf } from '../core/record-predicates';
import type { ToolSpec } from '../core/tool-spec';

/** One attempt, in an `execute_tool` span when telemetry is configured; the attempt runs the same either way. */
export function tracedAttempt<T extends { outcome: Outcome; call: { latencyMs: number; upstreamStatus?: number } }>(
  deps: Pick<Deps, 'telemetry'>,
  tool: ToolSpec,
  op: OperationRecord,
  attempt: number,
  run: () => Promise<T>,
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
    approval: op.approval?.state === 'approved' ? 'approved' : 'not_required',
    traceparent: op.traceparent,
  };
  return deps.telemetry.attemptSpan(start, run, (r) => ({
    outcome: r.outcome,
    upstreamStatus: r.call.upstreamStatus ?? upstreamStatusOf(r.outcome),
    latencyMs: r.call.latencyMs,
  }));
}
