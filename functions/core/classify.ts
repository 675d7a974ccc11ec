import { ensureError, isMalformedAnswer, isTransportError, isUpstreamHttpError, ToolRefusedError } from './errors';
import type { Outcome } from './model';
import { replaySafe } from './record-predicates';
import { serializeBounded } from './result-record';
import { maxResultBytesOf, type ToolSpec } from './tool-spec';

/**
 * The one place that turns whatever an attempt produced into an outcome class (the README's error matrix: "What the runner guarantees").
 * A write whose request may have reached the upstream is never "failed": it is outcome_unknown.
 */
export function classifyAttempt(spec: ToolSpec, attempt: { ok: true; value: unknown } | { ok: false; thrown: unknown }): Outcome {
  if (attempt.ok) return checkOutput(spec, attempt.value);
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
  // Refused before any tool code ran: nothing was sent, and sending it again to the same function changes nothing.
  if (error instanceof ToolRefusedError) return { kind: 'failed_permanent', code: 'permanent_failure', message: error.message };
  if (isMalformedAnswer(error)) return invalidOutput(spec, error.message);
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

/**
 * A tool's output as the record keeps it: serialized with bounds (size, depth, cycles, BigInt), checked
 * against the output schema in that JSON form, then serialized canonically. Anything that fails is
 * `invalid_output`; the result's text is in `json` (the execute step moves a large one to the blob store).
 */
export function checkOutput(spec: ToolSpec, value: unknown): Outcome {
  const raw = serializeBounded(value);
  if (!raw.ok) return invalidOutput(spec, raw.message);
  const parsed = spec.outputSchema.safeParse(JSON.parse(raw.json));
  if (!parsed.success) return invalidOutput(spec, 'the tool returned output that does not match its output schema');
  // The schema may transform (defaults, coercions): what is recorded is what it produced, bounded again.
  const checked = serializeBounded(parsed.data);
  if (!checked.ok) return invalidOutput(spec, checked.message);
  const omitted = checked.bytes > maxResultBytesOf(spec) ? ({ omitted: true } as const) : {};
  return { kind: 'succeeded', result: { bytes: checked.bytes, sha256: checked.sha256, json: checked.json, ...omitted } };
}

/**
 * A tool answered, but with something the runner cannot record or accept. A read had no effect: it failed.
 * A write may have acted before answering badly: its outcome is unknown, and its policy reconciles it.
 */
export function invalidOutput(spec: Pick<ToolSpec, 'risk'>, message: string): Outcome {
  return spec.risk === 'read'
    ? { kind: 'failed_permanent', code: 'invalid_output', message }
    : { kind: 'outcome_unknown', code: 'invalid_output', message };
}
