import { ensureError, isTransportError, isUpstreamHttpError } from './errors';
import type { Outcome } from './model';
import { replaySafe } from './record-predicates';
import type { ToolSpec } from './tool-spec';

/**
 * The one place that turns whatever an attempt produced into an outcome class (the README's error matrix: "What the runner guarantees").
 * A write whose request may have reached the upstream is never "failed": it is outcome_unknown.
 */
export function classifyAttempt(spec: ToolSpec, attempt: { ok: true; value: unknown } | { ok: false; thrown: unknown }): Outcome {
  if (attempt.ok) {
    const parsed = spec.outputSchema.safeParse(attempt.value);
    if (!parsed.success) {
      return {
        kind: 'failed_permanent',
        code: 'permanent_failure',
        message: 'the tool returned output that does not match its output schema',
      };
    }
    return { kind: 'succeeded', result: parsed.data };
  }
  const error = ensureError(attempt.thrown);
  const isWrite = spec.risk !== 'read';

  if (isUpstreamHttpError(error)) {
    const upstreamStatus = error.status;
    if (error.status === 429) {
      return {
        kind: 'failed_retryable',
        code: 'rate_limited',
        message: 'the upstream is rate limiting',
        upstreamStatus,
        retryAfterSeconds: error.retryAfterSeconds,
      };
    }
    if (error.status === 502 || error.status === 503 || error.status === 504) {
      return {
        kind: 'failed_retryable',
        code: 'upstream_unavailable',
        message: `the upstream is unavailable (${error.status})`,
        upstreamStatus,
        retryAfterSeconds: error.retryAfterSeconds,
      };
    }
    if (error.status >= 500) {
      // A 500 may come after the upstream committed: only a replay-safe call may treat it as transient.
      return replaySafe(spec)
        ? { kind: 'failed_retryable', code: 'upstream_unavailable', message: `the upstream failed (${error.status})`, upstreamStatus }
        : {
            kind: 'outcome_unknown',
            code: 'timeout_unknown',
            message: `the upstream failed (${error.status}) after the request was sent`,
            upstreamStatus,
          };
    }
    return {
      kind: 'failed_permanent',
      code: 'permanent_failure',
      message: `the upstream refused the request (${error.status}${error.code ? ` ${error.code}` : ''})`,
      upstreamStatus,
    };
  }
  if (isTransportError(error)) {
    if (!error.requestSent) {
      return { kind: 'failed_retryable', code: 'upstream_unavailable', message: `the upstream could not be reached (${error.reason})` };
    }
    if (!isWrite) {
      return { kind: 'failed_retryable', code: 'upstream_unavailable', message: `the read did not complete (${error.reason})` };
    }
    return { kind: 'outcome_unknown', code: 'timeout_unknown', message: `the request was sent but no answer arrived (${error.reason})` };
  }
  // Unexpected exceptions from tool code: a write may have happened, so it is unknown; a read is retryable.
  return isWrite
    ? { kind: 'outcome_unknown', code: 'timeout_unknown', message: 'the tool failed unexpectedly after it may have acted' }
    : { kind: 'failed_retryable', code: 'upstream_unavailable', message: 'the tool failed unexpectedly' };
}
